"""Release gates as asset checks (``gates:`` in eval.yaml): on each run's summary (against
the baseline variant, pass-rate floor, errored cells) and on its drift (against the
promoted baseline).

Blocking checks stop assets downstream in the same Dagster run; the figures they judge
come from summary.yaml and drift.yaml, so a check never re-reads the JSONL.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg

from evalh_pipeline.config import EvalSpec, load_eval
from evalh_pipeline.defs.resources import RUNTIME_KEY
from evalh_pipeline.models import RunSummary
from evalh_pipeline.queries.report import MAX_LISTED_CASES
from evalh_pipeline.runner.drift import NO_BASELINE, load_drift
from evalh_pipeline.runner.stages import load_summary
from evalh_pipeline.store.run_dir import RunDirectory, run_directory

# (eval.yaml, Dagster run id) -> the spec loaded for that run: the checks of one run share
# one load of eval.yaml instead of reading it once per check.
_LIVE: dict[tuple[Path, str], EvalSpec] = {}


def _run_dir(eval_path: Path, context: dg.AssetCheckExecutionContext) -> RunDirectory:
    key = (eval_path, context.run.run_id)
    live = _LIVE.get(key)
    if live is None:
        live = load_eval(eval_path)
        _LIVE.clear()  # keep only the current run's: a process executes one run's checks at a time
        _LIVE[key] = live
    # The CLI may name a run directory outside the eval's output folder (runtime.runs_root).
    return run_directory(getattr(context.resources, RUNTIME_KEY).locate(live), context.partition_key)


def build_summary_checks(
    spec: EvalSpec, summary: dg.AssetsDefinition, runs: dg.PartitionsDefinition
) -> list[dg.AssetChecksDefinition]:
    """The checks ``spec.config.gates`` asks for, on ``summary``'s run partitions."""
    gates = spec.config.gates
    eval_path = spec.path
    checks: list[dg.AssetChecksDefinition] = []

    def check(name: str, description: str, judge: Callable[[RunSummary], dg.AssetCheckResult]) -> None:
        @dg.asset_check(asset=summary, name=name, description=description, blocking=gates.blocking,
                        partitions_def=runs, required_resource_keys={RUNTIME_KEY})
        def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
            summary = load_summary(_run_dir(eval_path, context))
            if not any(v.cases_total for v in summary.variants):
                return _empty_run()
            return judge(summary)

        checks.append(_check)

    if gates.no_regressions_vs_baseline_variant and spec.config.run.baseline_variant:
        check("no_regressions_vs_baseline_variant",
              f"No case that passes on `{spec.config.run.baseline_variant}` fails on another variant.",
              _no_regressions)
    if gates.pass_rate_floor is not None:
        floor = gates.pass_rate_floor
        check("pass_rate_floor", f"Every variant passes at least {floor:.0%} of its cells.",
              lambda s: _pass_rate_floor(s, floor))
    if gates.max_errored_fraction is not None:
        ceiling = gates.max_errored_fraction
        check("errored_cells_under_threshold", f"At most {ceiling:.0%} of each variant's cells errored.",
              lambda s: _errored_under(s, ceiling))
    return checks


def build_drift_checks(
    spec: EvalSpec, drift: dg.AssetsDefinition, runs: dg.PartitionsDefinition
) -> list[dg.AssetChecksDefinition]:
    """``no_regressions_vs_promoted_baseline`` on ``drift`` (unless turned off in ``gates``)."""
    gates = spec.config.gates
    if not gates.no_regressions_vs_promoted_baseline:
        return []
    eval_path = spec.path

    @dg.asset_check(asset=drift, name="no_regressions_vs_promoted_baseline", blocking=gates.blocking,
                    partitions_def=runs, required_resource_keys={RUNTIME_KEY},
                    description="No case that passed in the eval's promoted baseline run fails in this run "
                                "(passes while no run is promoted).")
    def no_regressions_vs_promoted_baseline(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        run_dir = _run_dir(eval_path, context)
        if not any(v.cases_total for v in load_summary(run_dir).variants):
            return _empty_run()
        return _no_drift_regressions(load_drift(run_dir))

    return [no_regressions_vs_promoted_baseline]


def _empty_run() -> dg.AssetCheckResult:
    """No gate passes a run without cells: a filter that matched nothing checked nothing."""
    return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR, metadata={"cells": 0},
                               description="the run has no cells (no case was selected): an empty run fails every gate")


def _no_drift_regressions(drift: dict[str, Any]) -> dg.AssetCheckResult:
    if drift["status"] == NO_BASELINE:
        return dg.AssetCheckResult(passed=True, metadata={"baseline_run_id": "", "has_baseline": False},
                                   description="no promoted baseline: nothing to compare with")
    deltas = drift["comparison"]["comparison"]["deltas"]
    regressions = {d["variant"]: d["regressions"] for d in deltas if d["regressions"]}
    listed = "\n".join(f"- `{v}`: {', '.join(ids[:MAX_LISTED_CASES])}" for v, ids in regressions.items())
    return dg.AssetCheckResult(
        passed=not regressions,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "baseline_run_id": drift["baseline_run_id"],
            "has_baseline": True,
            "regressions": sum(len(ids) for ids in regressions.values()),
            **({"cases": dg.MetadataValue.md(listed)} if listed else {}),
        },
        description=(f"{drift['regressions_count']} regression(s) against {drift['baseline_run_id']}"
                     if regressions else None),
    )


def _no_regressions(summary: RunSummary) -> dg.AssetCheckResult:
    deltas = summary.comparison.deltas if summary.comparison else []
    regressions = {d.variant: d.regressions for d in deltas if d.regressions}
    listed = "\n".join(f"- `{v}`: {', '.join(ids[:MAX_LISTED_CASES])}" for v, ids in regressions.items())
    return dg.AssetCheckResult(
        passed=not regressions,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "regressions": sum(len(ids) for ids in regressions.values()),
            **({"cases": dg.MetadataValue.md(listed)} if listed else {}),
        },
    )


def _pass_rate_floor(summary: RunSummary, floor: float) -> dg.AssetCheckResult:
    below = {v.name: v.pass_rate for v in summary.variants if v.pass_rate < floor}
    return dg.AssetCheckResult(
        passed=not below,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"floor": floor, **{f"pass_rate/{v.name}": v.pass_rate for v in summary.variants}},
        description=", ".join(f"{name} at {rate:.1%}" for name, rate in below.items()) or None,
    )


def _errored_under(summary: RunSummary, ceiling: float) -> dg.AssetCheckResult:
    fractions = {v.name: (v.cases_errored / v.cases_total if v.cases_total else 0.0) for v in summary.variants}
    over = {name: f for name, f in fractions.items() if f > ceiling}
    return dg.AssetCheckResult(
        passed=not over,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"max_errored_fraction": ceiling, **{f"errored/{n}": f for n, f in fractions.items()}},
        description=", ".join(f"{name}: {f:.1%} errored" for name, f in over.items()) or None,
    )


__all__ = ["build_drift_checks", "build_summary_checks"]
