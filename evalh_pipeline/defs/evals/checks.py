"""Release gates as asset checks on each run's summary (``gates:`` in eval.yaml).

Blocking checks stop assets downstream of the summary in the same Dagster run; the
figures they judge come from summary.yaml, so a check never re-reads the JSONL.
"""

from collections.abc import Callable

import dagster as dg

from evalh_pipeline.config import EvalSpec, load_eval
from evalh_pipeline.models import RunSummary
from evalh_pipeline.queries.report import MAX_LISTED_CASES
from evalh_pipeline.runner.stages import load_summary
from evalh_pipeline.store.run_dir import run_directory


def build_summary_checks(
    spec: EvalSpec, summary: dg.AssetsDefinition, runs: dg.PartitionsDefinition
) -> list[dg.AssetChecksDefinition]:
    """The checks ``spec.config.gates`` asks for, on ``summary``'s run partitions."""
    gates = spec.config.gates
    eval_path = spec.path
    checks: list[dg.AssetChecksDefinition] = []

    def check(name: str, description: str, judge: Callable[[RunSummary], dg.AssetCheckResult]) -> None:
        @dg.asset_check(asset=summary, name=name, description=description, blocking=gates.blocking,
                        partitions_def=runs)
        def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
            live = load_eval(eval_path)
            return judge(load_summary(run_directory(live, context.partition_key)))

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


__all__ = ["build_summary_checks"]
