"""A run's rate limits: built from its eval (``run.rate_limits``, ``run.executor.pools``) for
one stage, and what each limit did recorded in the run folder (``rate_limits.jsonl``)."""

from __future__ import annotations

import json

from evalh_pipeline.common.ratelimits import RateLimits
from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.store.run_dir import RunDirectory


def run_rate_limits(spec: EvalSpec, run_dir: RunDirectory, max_concurrency: int | None = None,
                    pools_url: str | None = None) -> RateLimits:
    """The limiters one stage of the run ``run_dir`` of ``spec`` shares between its systems and
    judges. ``pools_url``: the database its pools are counted in for every process of the run
    (the Dagster layer passes its instance's: defs/pools.py); None: in this process."""
    run = spec.config.run
    return RateLimits(run.rate_limits, run.executor.pools, max_concurrency=max_concurrency or run.max_concurrency,
                      pools_url=pools_url, scope=f"{spec.name}/{run_dir.run_id}")


def record_rate_limits(run_dir: RunDirectory, limits: RateLimits, stage: str) -> None:
    """Append one line per limit the stage used (none: nothing written)."""
    records = limits.records(stage)
    if not records:
        return
    data = "".join(json.dumps(record, separators=(",", ":")) + "\n" for record in records).encode()
    # One unbuffered append: the shards of a run (runner/shards.py) append from several
    # processes at once, and one write with O_APPEND never interleaves with another's.
    with run_dir.rate_limits.open("ab", buffering=0) as out:
        out.write(data)
