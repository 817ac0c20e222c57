"""Helpers the Dagster-layer tests share: run what a sensor tick asked for, run a job for a partition."""

from __future__ import annotations

import dagster as dg


def apply_tick(data, instance: dg.DagsterInstance) -> None:
    """Add the partitions a sensor tick asked for, as the daemon does before launching its runs."""
    for request in data.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))


def execute_requested(defs: dg.Definitions, data, instance: dg.DagsterInstance, **kwargs) -> dg.ExecuteInProcessResult:
    """What the daemon does with a tick's one run request: add its partition, run its job for it."""
    apply_tick(data, instance)
    (request,) = data.run_requests
    return defs.resolve_job_def(request.job_name).execute_in_process(
        instance=instance, partition_key=request.partition_key, tags=request.tags, **kwargs)


def execute_for_partition(defs: dg.Definitions, job_name: str, eval_name: str, run_id: str,
                          instance: dg.DagsterInstance, **kwargs) -> dg.ExecuteInProcessResult:
    """A launch of ``job_name`` on the partition ``run_id`` (added first), as the UI's launch does."""
    partitions = f"{eval_name}__runs"
    if not instance.has_dynamic_partition(partitions, run_id):
        instance.add_dynamic_partitions(partitions, [run_id])
    return defs.resolve_job_def(job_name).execute_in_process(instance=instance, partition_key=run_id, **kwargs)
