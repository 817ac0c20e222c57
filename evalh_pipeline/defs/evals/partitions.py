"""Partitions of an eval: a dynamic partition per run, times the variants.

Never a partition per case: runs, events and the UI would not scale to that.
"""

from __future__ import annotations

import dagster as dg

from evalh_pipeline.config.spec import EvalSpec

RUN_DIM = "run"
VARIANT_DIM = "variant"


def runs_partitions(eval_name: str) -> dg.DynamicPartitionsDefinition:
    return dg.DynamicPartitionsDefinition(name=f"{eval_name}__runs")


def cells_partitions(spec: EvalSpec) -> dg.MultiPartitionsDefinition:
    return dg.MultiPartitionsDefinition(
        {RUN_DIM: runs_partitions(spec.name), VARIANT_DIM: dg.StaticPartitionsDefinition(sorted(spec.variant_names))}
    )


def group_by_run(keys: list[str]) -> dict[str, list[str]]:
    """``["r1|a", "r1|b", "r2|a"]`` -> ``{"r1": ["a", "b"], "r2": ["a"]}``."""
    grouped: dict[str, list[str]] = {}
    for key in keys:
        dims = key.keys_by_dimension if isinstance(key, dg.MultiPartitionKey) else None
        if dims is None:
            run_id, variant = key.split("|", 1)
        else:
            run_id, variant = dims[RUN_DIM], dims[VARIANT_DIM]
        grouped.setdefault(run_id, []).append(variant)
    return grouped


def variant_range_tags(run_id: str, variants: list[str]) -> dict[str, str]:
    """Tags for one single-run materialization of every variant of a run.

    Multi-partition keys are ordered run-major, then by variant name (the static dimension
    is sorted), so one run's variants form a contiguous range.
    """
    ordered = sorted(variants)
    return {
        "dagster/asset_partition_range_start": f"{run_id}|{ordered[0]}",
        "dagster/asset_partition_range_end": f"{run_id}|{ordered[-1]}",
    }
