"""The Dagster floor: the least a process that runs Dagster in process can cost.

    DAGSTER_HOME=<an existing instance> python benchmarks/dagster_floor.py PARTITION_KEY

A fresh process that imports Dagster, opens the existing instance, adds PARTITION_KEY to a
dynamic partitions definition and materializes a chain of five trivial assets (a -> b -> c
-> d -> e, each returning an empty MaterializeResult) for that partition in process, as
`evalh` executes its jobs (defs/launch.py): same instance config, same console log level.
benchmarks/dagster_bench.py times it as a whole process; `evalh run` of a one-case eval and
`evalh re-evaluate` of that run are measured against it. It imports nothing else, so its
time is Dagster's alone.
"""

from __future__ import annotations

import os
import sys

import dagster as dg

PARTITIONS = dg.DynamicPartitionsDefinition(name="floor__runs")


def chain() -> list[dg.AssetsDefinition]:
    """Five trivial partitioned assets, each depending on the one before."""
    assets: list[dg.AssetsDefinition] = []
    for name in "abcde":
        @dg.asset(name=name, deps=assets[-1:], partitions_def=PARTITIONS)
        def trivial() -> dg.MaterializeResult:
            return dg.MaterializeResult()
        assets.append(trivial)
    return assets


def main(partition: str) -> int:
    assets = chain()
    defs = dg.Definitions(assets=assets, jobs=[dg.define_asset_job("floor", selection=dg.AssetSelection.assets(*assets))])
    instance = dg.DagsterInstance.from_config(os.environ["DAGSTER_HOME"])
    if not instance.has_dynamic_partition(PARTITIONS.name, partition):
        instance.add_dynamic_partitions(PARTITIONS.name, [partition])
    result = defs.resolve_job_def("floor").execute_in_process(
        instance=instance, partition_key=partition,
        run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}})
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
