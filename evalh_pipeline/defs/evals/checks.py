"""Asset checks on each run: ``complete`` and the release gates (``gates:`` in eval.yaml).

On ``summary``: ``complete`` (every expected cell has a trace), and the gates
``no_regressions_vs_baseline_variant``, ``pass_rate_floor``, ``errored_cells_under_threshold``;
``no_significant_regression_vs_baseline_variant``; on ``drift``:
``no_regressions_vs_promoted_baseline``, ``no_significant_regression_vs_promoted_baseline``. A gate that fails is a failed (red)
check whose metadata lists the regressed case ids; the run still completes and drift is
still computed. Only ``gates.blocking: true`` makes the gates blocking (a failed gate then
fails the Dagster run, and a failed summary gate stops the drift).

Every check is defined for every eval and reads the gates of the eval.yaml as it is when it
runs, so turning a gate on or off, or moving a floor, needs no reload; a gate that is off
passes and says so. The figures come from summary.yaml and drift.yaml, never the JSONL.
"""


from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.config.schema import GatesConfig
from evalh_pipeline.defs.evals.runs import live_spec, resolve_run_id
from evalh_pipeline.defs.resources import RUNTIME_KEY
from evalh_pipeline.models import RunSummary
from evalh_pipeline.queries.report import MAX_LISTED_CASES
from evalh_pipeline.runner.drift import load_drift
from evalh_pipeline.runner.stages import load_summary
from evalh_pipeline.store.run_dir import RunDirectory, run_directory

Judge = Callable[[EvalSpec, RunDirectory], dg.AssetCheckResult]


@dataclass(frozen=True)
class _Gate:
    name: str
    description: str
    judge: Judge
    blocking: bool


def _checks(spec: EvalSpec, asset: dg.AssetsDefinition, gates: list[_Gate]) -> dg.AssetChecksDefinition:
    """The checks of one asset as one step (each check can still run alone: can_subset).

    One step rather than one per check: every step costs the run a handful of events in
    Dagster's storage, which is most of what a run spends after its cells are done."""
    (key,) = asset.keys
    by_key = {dg.AssetCheckKey(key, gate.name): gate for gate in gates}

    @dg.multi_asset_check(
        specs=[dg.AssetCheckSpec(gate.name, asset=asset, description=gate.description, blocking=gate.blocking)
               for gate in gates],
        name=f"{'__'.join(key.path)}__checks".replace("/", "_"), can_subset=True,
        required_resource_keys={RUNTIME_KEY},
    )
    def _run(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        op = context.op_execution_context
        live = live_spec(op, spec)
        run_dir = run_directory(live, resolve_run_id(op, spec.name))
        for check_key in sorted(context.selected_asset_check_keys, key=lambda k: k.name):
            gate = by_key[check_key]
            result = gate.judge(live, run_dir)
            yield dg.AssetCheckResult(
                asset_key=key, check_name=gate.name, passed=result.passed, severity=result.severity,
                description=result.description, metadata={"run_id": run_dir.run_id, **(result.metadata or {})},
            )

    return _run


def _off(reason: str) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True, description=reason, metadata={"gate": "off"})


def _empty_run() -> dg.AssetCheckResult:
    """No gate passes a run without cells: a filter that matched nothing checked nothing."""
    return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR, metadata={"cells": 0},
                               description="the run has no cells (no case was selected): an empty run fails every gate")


def _has_cells(summary: RunSummary) -> bool:
    return any(v.cases_total for v in summary.variants)


def build_summary_checks(spec: EvalSpec, summary: dg.AssetsDefinition) -> list[dg.AssetChecksDefinition]:
    """``complete`` and the three gates on ``summary``."""
    blocking = spec.config.gates.blocking

    def complete(live: EvalSpec, run_dir: RunDirectory) -> dg.AssetCheckResult:
        s = load_summary(run_dir)
        if s.completeness is None:
            return dg.AssetCheckResult(passed=False, description="summary.yaml records no completeness: "
                                       "rematerialize summary")
        done = s.completeness
        return dg.AssetCheckResult(
            passed=done.complete, description=done.describe(),
            metadata={"expected_cells": done.expected_cells, "present_cells": done.present_cells,
                      **{f"present/{v}": c.present for v, c in done.by_variant.items()},
                      **({"missing_variants": dg.MetadataValue.json(done.missing_variants)}
                         if done.missing_variants else {})},
        )

    def gated(judge: Callable[[GatesConfig, EvalSpec, RunSummary], dg.AssetCheckResult]) -> Judge:
        def run(live: EvalSpec, run_dir: RunDirectory) -> dg.AssetCheckResult:
            summary = load_summary(run_dir)
            result = judge(live.config.gates, live, summary)
            gate = (result.metadata or {}).get("gate")
            off = getattr(gate, "value", gate) == "off"
            return result if off or _has_cells(summary) else _empty_run()

        return run

    return [_checks(spec, summary, [
        _Gate("complete", "Every expected cell (cases × variants × samples of the run's own snapshot) has a trace.",
              complete, blocking=False),
        _Gate("no_regressions_vs_baseline_variant",
              "No case that passes on `run.baseline_variant` fails on another variant "
              "(gates.no_regressions_vs_baseline_variant).", gated(_no_regressions), blocking),
        _Gate("pass_rate_floor", "Every variant passes at least gates.pass_rate_floor of its cells.",
              gated(_pass_rate_floor), blocking),
        _Gate("errored_cells_under_threshold",
              "At most gates.max_errored_fraction of each variant's cells errored.", gated(_errored_under), blocking),
        _Gate("no_significant_regression_vs_baseline_variant",
              "No variant is significantly worse than `run.baseline_variant` (McNemar's exact test, "
              "p < gates.no_significant_regression.alpha).", gated(_no_significant_regression), blocking),
    ])]


def build_drift_checks(spec: EvalSpec, drift: dg.AssetsDefinition) -> list[dg.AssetChecksDefinition]:
    """``no_regressions_vs_promoted_baseline`` on ``drift``."""

    def no_drift_regressions(live: EvalSpec, run_dir: RunDirectory) -> dg.AssetCheckResult:
        if not live.config.gates.no_regressions_vs_promoted_baseline:
            return _off("gates.no_regressions_vs_promoted_baseline is false in eval.yaml")
        record = _drift_deltas(run_dir)
        if isinstance(record, dg.AssetCheckResult):
            return record
        baseline, deltas = record
        return _regressions_result(_regressed_cases(deltas), f"against the promoted baseline {baseline}",
                                   {"baseline_run_id": baseline})

    def no_significant_drift(live: EvalSpec, run_dir: RunDirectory) -> dg.AssetCheckResult:
        gate = live.config.gates.no_significant_regression
        if gate is None:
            return _off("no gates.no_significant_regression in eval.yaml")
        record = _drift_deltas(run_dir)
        if isinstance(record, dg.AssetCheckResult):
            return record
        _, deltas = record
        return _significance_result({d["variant"]: d["significance"] for d in deltas if d.get("significance")},
                                    gate.alpha)

    blocking = spec.config.gates.blocking
    return [_checks(spec, drift, [
        _Gate("no_regressions_vs_promoted_baseline",
              "No case that passed in the eval's promoted baseline run fails in this run "
              "(passes while no run is promoted).", no_drift_regressions, blocking),
        _Gate("no_significant_regression_vs_promoted_baseline",
              "No variant is significantly worse than in the eval's promoted baseline run (McNemar's exact "
              "test, p < gates.no_significant_regression.alpha; passes while no run is promoted).",
              no_significant_drift, blocking),
    ])]


def _drift_deltas(run_dir: RunDirectory) -> tuple[str, list[dict[str, Any]]] | dg.AssetCheckResult:
    """(baseline run id, per-variant deltas) of the run's drift.yaml, or the verdict of a drift
    gate that has nothing to compare: an empty run fails, no promoted baseline passes."""
    if not _has_cells(load_summary(run_dir)):
        return _empty_run()
    record = load_drift(run_dir)
    if not record.get("baseline_run_id"):
        return dg.AssetCheckResult(passed=True, description="no promoted baseline yet (evalh promote)",
                                   metadata={"has_baseline": False})
    deltas = ((record.get("comparison") or {}).get("comparison") or {}).get("deltas") or []
    return str(record["baseline_run_id"]), deltas


def _regressed_cases(deltas: list[Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for d in deltas:
        variant, ids = (d.variant, d.regressions) if hasattr(d, "variant") else (d.get("variant"), d.get("regressions"))
        if ids:
            found[str(variant)] = [str(i) for i in ids]
    return found


def _regressions_result(regressed: dict[str, list[str]], against: str, extra: dict[str, Any]) -> dg.AssetCheckResult:
    count = sum(len(ids) for ids in regressed.values())
    listed = "\n".join(f"- `{v}`: {', '.join(ids[:MAX_LISTED_CASES])}"
                       + (f" … and {len(ids) - MAX_LISTED_CASES} more" if len(ids) > MAX_LISTED_CASES else "")
                       for v, ids in regressed.items())
    return dg.AssetCheckResult(
        passed=not regressed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(f"{count} regression(s) {against}: "
                     + "; ".join(f"{v}: {', '.join(ids[:10])}" + (" …" if len(ids) > 10 else "")
                                 for v, ids in regressed.items())) if regressed else f"no regressions {against}",
        metadata={
            "regressions": count,
            **extra,
            **({"regressed_case_ids": dg.MetadataValue.json(regressed), "cases": dg.MetadataValue.md(listed)}
               if regressed else {}),
        },
    )


def _no_regressions(gates: GatesConfig, live: EvalSpec, summary: RunSummary) -> dg.AssetCheckResult:
    if not gates.no_regressions_vs_baseline_variant:
        return _off("gates.no_regressions_vs_baseline_variant is false in eval.yaml")
    baseline = live.config.run.baseline_variant
    if baseline is None:
        return _off("no run.baseline_variant in eval.yaml: nothing to compare the variants with")
    if summary.comparison is None:
        return dg.AssetCheckResult(
            passed=False, severity=dg.AssetCheckSeverity.ERROR,
            description=f"the baseline variant {baseline} has no traces in this run, so nothing was compared",
            metadata={"baseline_variant": baseline})
    return _regressions_result(_regressed_cases(summary.comparison.deltas), f"against {summary.comparison.baseline}",
                               {"baseline_variant": summary.comparison.baseline})


def _no_significant_regression(gates: GatesConfig, live: EvalSpec, summary: RunSummary) -> dg.AssetCheckResult:
    gate = gates.no_significant_regression
    if gate is None:
        return _off("no gates.no_significant_regression in eval.yaml")
    if live.config.run.baseline_variant is None or summary.comparison is None:
        return _off("no comparison with a baseline variant in this run: nothing to test")
    return _significance_result({d.variant: d.significance.model_dump() for d in summary.comparison.deltas
                                 if d.significance is not None}, gate.alpha)


def _significance_result(by_variant: dict[str, dict[str, Any]], alpha: float) -> dg.AssetCheckResult:
    """Fails when some variant has more worse than better cases with McNemar p < ``alpha``."""
    regressed = {
        variant: stats for variant, stats in by_variant.items()
        if stats.get("mcnemar_p_value") is not None and stats["mcnemar_p_value"] < alpha
        and stats["cases_worse"] > stats["cases_better"]
    }
    metadata: dict[str, Any] = {"alpha": alpha}
    for variant, stats in by_variant.items():
        if stats.get("mcnemar_p_value") is not None:
            metadata[f"mcnemar_p_value/{variant}"] = dg.MetadataValue.float(stats["mcnemar_p_value"])
        metadata[f"verdict/{variant}"] = stats.get("verdict", "")
    return dg.AssetCheckResult(
        passed=not regressed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=metadata,
        description="; ".join(f"{variant}: {stats['verdict']}" for variant, stats in regressed.items())
        or f"no regression significant at alpha {alpha}",
    )


def _pass_rate_floor(gates: GatesConfig, live: EvalSpec, summary: RunSummary) -> dg.AssetCheckResult:
    floor = gates.pass_rate_floor
    if floor is None:
        return _off("no gates.pass_rate_floor in eval.yaml")
    below = {v.name: v.pass_rate for v in summary.variants if v.pass_rate < floor}
    return dg.AssetCheckResult(
        passed=not below,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"floor": floor, **{f"pass_rate/{v.name}": v.pass_rate for v in summary.variants}},
        description=", ".join(f"{name} at {rate:.1%} (floor {floor:.0%})" for name, rate in below.items())
        or f"every variant at or above {floor:.0%}",
    )


def _errored_under(gates: GatesConfig, live: EvalSpec, summary: RunSummary) -> dg.AssetCheckResult:
    ceiling = gates.max_errored_fraction
    if ceiling is None:
        return _off("no gates.max_errored_fraction in eval.yaml")
    fractions = {v.name: (v.cases_errored / v.cases_total if v.cases_total else 0.0) for v in summary.variants}
    over = {name: f for name, f in fractions.items() if f > ceiling}
    return dg.AssetCheckResult(
        passed=not over,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"max_errored_fraction": ceiling, **{f"errored/{n}": f for n, f in fractions.items()}},
        description=", ".join(f"{name}: {f:.1%} errored" for name, f in over.items())
        or f"every variant at or under {ceiling:.0%} errored",
    )


__all__ = ["build_drift_checks", "build_summary_checks"]
