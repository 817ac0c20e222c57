"""The release gates of a run (``gates:`` in eval.yaml) and its ``complete`` check, judged from its files.

On the summary: ``complete`` (every expected cell has a trace), ``no_regressions_vs_baseline_variant``,
``pass_rate_floor``, ``errored_cells_under_threshold`` and
``no_significant_regression_vs_baseline_variant`` and ``non_inferiority_vs_baseline_variant``;
on the drift: ``no_regressions_vs_promoted_baseline``, ``no_significant_regression_vs_promoted_baseline``
and ``non_inferiority_vs_promoted_baseline``.
The figures come from summary.yaml and drift.yaml, never the JSONL, and the gates are read
from the eval.yaml as it is when they are judged (a gate that is off passes and says so).

A gate on the evaluators' verdicts (every one but ``complete`` and
``errored_cells_under_threshold``) fails while some results of the run could not be judged
(summary.yaml ``not_judged``: a judge unreachable), saying so first: their cells are left
out of the figures, so nothing was shown either way.

Dagster's asset checks (defs/evals/checks.py) and the CLI (which prints the failed gates
and exits 1 on them with ``--fail-on-gate``) judge with these same functions, so both
always agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.config.schema import GatesConfig
from evalh_pipeline.models import RunSummary
from evalh_pipeline.queries.report import MAX_LISTED_CASES
from evalh_pipeline.runner.drift import load_drift
from evalh_pipeline.runner.stages import load_summary
from evalh_pipeline.stats.multiplicity import holm
from evalh_pipeline.stats.paired import format_p_value, power_line
from evalh_pipeline.store.run_dir import RunDirectory

SUMMARY, DRIFT = "summary", "drift"


@dataclass(frozen=True)
class Markdown:
    """A metadata value shown as markdown (a table, a list of case ids)."""

    text: str


@dataclass(frozen=True)
class Json:
    """A metadata value shown as JSON (case ids per variant)."""

    value: Any


@dataclass(frozen=True)
class GateVerdict:
    """One gate's verdict on one run; ``metadata`` holds plain values, Markdown and Json."""

    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def off(self) -> bool:
        return self.metadata.get("gate") == "off"


class RunFiles:
    """What the gates of one run read: its summary.yaml and drift.yaml, each read at most once.

    A summary.yaml of a run with thousands of regressions takes ~20 ms to load, and five
    gates read it; ``summary`` seeds the summary a caller has just written (it is what the
    file holds), so the CLI's gates read no summary at all.
    """

    def __init__(self, run_dir: RunDirectory, summary: RunSummary | None = None) -> None:
        self.run_dir = run_dir
        if summary is not None:
            self.__dict__["summary"] = summary

    @cached_property
    def summary(self) -> RunSummary:
        return load_summary(self.run_dir)

    @cached_property
    def drift(self) -> dict[str, Any]:
        return load_drift(self.run_dir)


Judge = Callable[[EvalSpec, RunFiles], GateVerdict]


@dataclass(frozen=True)
class Gate:
    """A named gate on one of the run's stages (``summary`` or ``drift``).

    ``gated``: a release gate, blocking when the eval sets ``gates.blocking``; ``complete`` is
    not one (an incomplete run is reported, never blocked on)."""

    name: str
    stage: str
    description: str
    judge: Judge
    gated: bool = True

    def blocking(self, spec: EvalSpec) -> bool:
        return self.gated and spec.config.gates.blocking


@dataclass(frozen=True)
class JudgedGate:
    gate: Gate
    verdict: GateVerdict

    def label(self, eval_name: str) -> str:
        """``<eval>/<stage>: <gate>``, as the CLI prints a failed gate (Dagster's check key)."""
        return f"{eval_name}/{self.gate.stage}: {self.gate.name}"


def judge_gates(spec: EvalSpec, run: RunDirectory | RunFiles, stage: str) -> list[JudgedGate]:
    """Every gate of ``stage`` on ``run``, in name order (the order Dagster runs them in)."""
    files = run if isinstance(run, RunFiles) else RunFiles(run)
    return [JudgedGate(gate, gate.judge(spec, files)) for gate in sorted(GATES, key=lambda g: g.name)
            if gate.stage == stage]


def blocked(spec: EvalSpec, judged: list[JudgedGate]) -> bool:
    """True when a blocking gate failed: what comes after it (the drift) is not computed."""
    return any(not j.verdict.passed and j.gate.blocking(spec) for j in judged)


def _off(reason: str) -> GateVerdict:
    return GateVerdict(passed=True, description=reason, metadata={"gate": "off"})


def _empty_run() -> GateVerdict:
    """No gate passes a run without cells: a filter that matched nothing checked nothing."""
    return GateVerdict(passed=False, metadata={"cells": 0},
                       description="the run has no cells (no case was selected): an empty run fails every gate")


def _has_cells(summary: RunSummary) -> bool:
    return any(v.cases_total for v in summary.variants)


def _complete(live: EvalSpec, run: RunFiles) -> GateVerdict:
    s = run.summary
    if s.completeness is None:
        return GateVerdict(passed=False, description="summary.yaml records no completeness: rematerialize summary")
    done = s.completeness
    return GateVerdict(
        passed=done.complete, description=done.describe(),
        metadata={"expected_cells": done.expected_cells, "present_cells": done.present_cells,
                  **{f"present/{v}": c.present for v, c in done.by_variant.items()},
                  **({"missing_variants": Json(done.missing_variants)} if done.missing_variants else {})},
    )


def _on_summary(judge: Callable[[GatesConfig, EvalSpec, RunSummary], GateVerdict], *,
                on_verdicts: bool = True) -> Judge:
    """A gate judged on the summary; ``on_verdicts``: on the evaluators' verdicts (so it
    cannot pass while some of them could not be judged)."""
    def run(live: EvalSpec, files: RunFiles) -> GateVerdict:
        summary = files.summary
        verdict = judge(live.config.gates, live, summary)
        if not (verdict.off or _has_cells(summary)):
            return _empty_run()
        return _not_judged(verdict, summary) if on_verdicts else verdict

    return run


def _not_judged(verdict: GateVerdict, summary: RunSummary) -> GateVerdict:
    """``verdict`` of a gate on verdicts, or, when some results of the run could not be judged
    (the judge unreachable), a failure that says so first: those cells are no regression, and
    none was shown either. What the gate found on the judged cells follows."""
    missing = summary.not_judged
    if verdict.off or missing is None:
        return verdict
    rest = ("; on the judged cells: " + verdict.description) if not verdict.passed else ""
    return GateVerdict(passed=False, description=missing.describe() + rest,
                       metadata={**verdict.metadata, "not_judged": missing.results})


def _on_drift(judge: Judge) -> Judge:
    """A drift gate: it cannot pass while some results of the run could not be judged."""
    def run(live: EvalSpec, files: RunFiles) -> GateVerdict:
        verdict = judge(live, files)
        if verdict.metadata.get("cells") == 0 or verdict.metadata.get("has_baseline") is False:
            return verdict  # nothing was compared
        return _not_judged(verdict, files.summary)

    return run


def _regressed_cases(deltas: list[Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for d in deltas:
        variant, ids = (d.variant, d.regressions) if hasattr(d, "variant") else (d.get("variant"), d.get("regressions"))
        if ids:
            found[str(variant)] = [str(i) for i in ids]
    return found


def _regressions_verdict(regressed: dict[str, list[str]], against: str, extra: dict[str, Any]) -> GateVerdict:
    count = sum(len(ids) for ids in regressed.values())
    listed = "\n".join(f"- `{v}`: {', '.join(ids[:MAX_LISTED_CASES])}"
                       + (f" … and {len(ids) - MAX_LISTED_CASES} more" if len(ids) > MAX_LISTED_CASES else "")
                       for v, ids in regressed.items())
    return GateVerdict(
        passed=not regressed,
        description=(f"{count} regression(s) {against}: "
                     + "; ".join(f"{v}: {', '.join(ids[:10])}" + (" …" if len(ids) > 10 else "")
                                 for v, ids in regressed.items())) if regressed else f"no regressions {against}",
        metadata={
            "regressions": count,
            **extra,
            **({"regressed_case_ids": Json(regressed), "cases": Markdown(listed)} if regressed else {}),
        },
    )


def _no_regressions(gates: GatesConfig, live: EvalSpec, summary: RunSummary) -> GateVerdict:
    if not gates.no_regressions_vs_baseline_variant:
        return _off("gates.no_regressions_vs_baseline_variant is false in eval.yaml")
    baseline = live.config.run.baseline_variant
    if baseline is None:
        return _off("no run.baseline_variant in eval.yaml: nothing to compare the variants with")
    if summary.comparison is None:
        return GateVerdict(
            passed=False, metadata={"baseline_variant": baseline},
            description=f"the baseline variant {baseline} has no traces in this run, so nothing was compared")
    return _regressions_verdict(_regressed_cases(summary.comparison.deltas), f"against {summary.comparison.baseline}",
                                {"baseline_variant": summary.comparison.baseline})


def _no_significant_regression(gates: GatesConfig, live: EvalSpec, summary: RunSummary) -> GateVerdict:
    gate = gates.no_significant_regression
    if gate is None:
        return _off("no gates.no_significant_regression in eval.yaml")
    if live.config.run.baseline_variant is None or summary.comparison is None:
        return _off("no comparison with a baseline variant in this run: nothing to test")
    return _significance_verdict({d.variant: d.significance.model_dump() for d in summary.comparison.deltas
                                  if d.significance is not None}, gate.alpha)


def _significance_verdict(by_variant: dict[str, dict[str, Any]], alpha: float) -> GateVerdict:
    """Fails when some variant has more worse than better cases with a Holm-adjusted p-value
    below ``alpha``: the family is every variant the gate tests, so that the chance of any
    false alarm stays at ``alpha`` however many variants there are."""
    tested = [v for v, stats in by_variant.items() if stats.get("mcnemar_p_value") is not None]
    adjusted = dict(zip(tested, holm([float(by_variant[v]["mcnemar_p_value"]) for v in tested])))
    regressed = {
        variant: by_variant[variant] for variant, p in adjusted.items()
        if p < alpha and by_variant[variant]["cases_worse"] > by_variant[variant]["cases_better"]
    }
    metadata: dict[str, Any] = {"alpha": alpha, "adjustment": "holm"}
    for variant, stats in by_variant.items():
        if variant in adjusted:
            metadata[f"mcnemar_p_value/{variant}"] = float(stats["mcnemar_p_value"])
            metadata[f"p_value_holm/{variant}"] = adjusted[variant]
        metadata[f"verdict/{variant}"] = stats.get("verdict", "")
    return GateVerdict(
        passed=not regressed, metadata=metadata,
        description="; ".join(f"{variant}: {stats['verdict']} (Holm-adjusted over {len(tested)} variant(s): "
                              f"{format_p_value(adjusted[variant])})" for variant, stats in regressed.items())
        or f"no regression significant at alpha {alpha} (Holm-adjusted over {len(tested)} variant(s))",
    )


def _non_inferiority(gates: GatesConfig, live: EvalSpec, summary: RunSummary) -> GateVerdict:
    gate = gates.non_inferiority
    if gate is None:
        return _off("no gates.non_inferiority in eval.yaml")
    if live.config.run.baseline_variant is None:
        return _off("no run.baseline_variant in eval.yaml: non-inferiority is judged on drift only")
    if summary.comparison is None:
        return GateVerdict(passed=False, metadata={"margin": gate.margin},
                           description=f"the baseline variant {live.config.run.baseline_variant} has no traces in "
                                       "this run: non-inferiority not shown")
    return _non_inferiority_verdict({d.variant: d.significance.model_dump() if d.significance else {}
                                     for d in summary.comparison.deltas}, gate.margin)


def _non_inferiority_verdict(by_variant: dict[str, dict[str, Any]], margin: float) -> GateVerdict:
    """Passes when every variant's pass-rate delta has a 95% interval whose lower bound is above
    -``margin``: each variant is shown no worse by more than the margin. An eval too small to
    show it fails (an intersection-union test: every variant must pass, so no adjustment for
    their number is needed)."""
    failing: dict[str, str] = {}
    metadata: dict[str, Any] = {"margin": margin}
    for variant, stats in by_variant.items():
        ci = stats.get("delta_ci95")
        mde = stats.get("mde")
        if mde is not None:
            metadata[f"mde/{variant}"] = float(mde)
        if not ci:
            failing[variant] = f"{variant}: no case compared, non-inferiority not shown"
            continue
        metadata[f"delta_ci_low/{variant}"] = float(ci[0])
        if ci[0] <= -margin:
            failing[variant] = (f"{variant}: the delta's 95% CI reaches {_points(ci[0])} pp, below -{_points(margin)} pp"
                                + (f" ({power_line(mde)})" if mde is not None else ""))
    if not by_variant:
        return GateVerdict(passed=False, metadata=metadata, description="no variant compared: non-inferiority not shown")
    return GateVerdict(passed=not failing, metadata=metadata,
                       description="; ".join(failing.values())
                       or f"every variant shown within -{_points(margin)} pp of its reference (95% CI)")


def _points(value: float) -> str:
    return format(round(value * 100, 1) + 0.0, ".1f")


def _per_variant(failing: dict[str, str], metadata: dict[str, Any], ok: str) -> GateVerdict:
    """A gate judged per variant: ``failing`` says why each failing variant fails."""
    return GateVerdict(passed=not failing, metadata=metadata, description=", ".join(failing.values()) or ok)


def _pass_rate_floor(gates: GatesConfig, live: EvalSpec, summary: RunSummary) -> GateVerdict:
    floor = gates.pass_rate_floor
    if floor is None:
        return _off("no gates.pass_rate_floor in eval.yaml")
    return _per_variant(
        {v.name: f"{v.name} at {v.pass_rate:.1%} (floor {floor:.0%})" for v in summary.variants if v.pass_rate < floor},
        {"floor": floor, **{f"pass_rate/{v.name}": v.pass_rate for v in summary.variants}},
        f"every variant at or above {floor:.0%}")


def _errored_under(gates: GatesConfig, live: EvalSpec, summary: RunSummary) -> GateVerdict:
    ceiling = gates.max_errored_fraction
    if ceiling is None:
        return _off("no gates.max_errored_fraction in eval.yaml")
    fractions = {v.name: (v.cases_errored / v.cases_total if v.cases_total else 0.0) for v in summary.variants}
    return _per_variant(
        {name: f"{name}: {f:.1%} errored" for name, f in fractions.items() if f > ceiling},
        {"max_errored_fraction": ceiling, **{f"errored/{n}": f for n, f in fractions.items()}},
        f"every variant at or under {ceiling:.0%} errored")


def _drift_deltas(run: RunFiles) -> tuple[str, list[dict[str, Any]]] | GateVerdict:
    """(baseline run id, per-variant deltas) of the run's drift.yaml, or the verdict of a drift
    gate that has nothing to compare: an empty run fails, no promoted baseline passes."""
    if not _has_cells(run.summary):
        return _empty_run()
    record = run.drift
    if not record.get("baseline_run_id"):
        return GateVerdict(passed=True, description="no promoted baseline yet (evalh promote)",
                           metadata={"has_baseline": False})
    deltas = ((record.get("comparison") or {}).get("comparison") or {}).get("deltas") or []
    return str(record["baseline_run_id"]), deltas


def _no_drift_regressions(live: EvalSpec, run: RunFiles) -> GateVerdict:
    if not live.config.gates.no_regressions_vs_promoted_baseline:
        return _off("gates.no_regressions_vs_promoted_baseline is false in eval.yaml")
    record = _drift_deltas(run)
    if isinstance(record, GateVerdict):
        return record
    baseline, deltas = record
    # A case whose answers are the same and that only an edited evaluator stopped passing is
    # not a regression of the system (queries/evaluator_configs.py): left out, and said.
    evaluator_only = (run.drift.get("comparison") or {}).get("evaluator_only_regressions") or {}
    regressed = {v: kept for v, ids in _regressed_cases(deltas).items()
                 if (kept := [c for c in ids if c not in set(evaluator_only.get(v, []))])}
    against = f"against the promoted baseline {baseline}"
    extra: dict[str, Any] = {"baseline_run_id": baseline}
    if evaluator_only:
        left_out = sum(len(ids) for ids in evaluator_only.values())
        against += (f" ({left_out} evaluator-config-only left out: same answers, an evaluator's config changed; "
                    f"{run.drift.get('rejudge_baseline') or 'evalh re-evaluate'} re-judges the baseline)")
        extra["evaluator_config_only_regressions"] = left_out
    return _regressions_verdict(regressed, against, extra)


def _no_significant_drift(live: EvalSpec, run: RunFiles) -> GateVerdict:
    gate = live.config.gates.no_significant_regression
    if gate is None:
        return _off("no gates.no_significant_regression in eval.yaml")
    record = _drift_deltas(run)
    if isinstance(record, GateVerdict):
        return record
    _, deltas = record
    return _significance_verdict({d["variant"]: d["significance"] for d in deltas if d.get("significance")},
                                 gate.alpha)


def _non_inferior_drift(live: EvalSpec, run: RunFiles) -> GateVerdict:
    gate = live.config.gates.non_inferiority
    if gate is None:
        return _off("no gates.non_inferiority in eval.yaml")
    record = _drift_deltas(run)
    if isinstance(record, GateVerdict):
        return record
    _, deltas = record
    return _non_inferiority_verdict({d["variant"]: d.get("significance") or {} for d in deltas}, gate.margin)


GATES: tuple[Gate, ...] = (
    Gate("complete", SUMMARY,
         "Every expected cell (cases × variants × samples of the run's own snapshot) has a trace.",
         _complete, gated=False),
    Gate("no_regressions_vs_baseline_variant", SUMMARY,
         "No case that passes on `run.baseline_variant` fails on another variant "
         "(gates.no_regressions_vs_baseline_variant).", _on_summary(_no_regressions)),
    Gate("pass_rate_floor", SUMMARY, "Every variant passes at least gates.pass_rate_floor of its cells.",
         _on_summary(_pass_rate_floor)),
    Gate("errored_cells_under_threshold", SUMMARY,
         "At most gates.max_errored_fraction of each variant's cells errored.",
         _on_summary(_errored_under, on_verdicts=False)),
    Gate("no_significant_regression_vs_baseline_variant", SUMMARY,
         "No variant is significantly worse than `run.baseline_variant` (McNemar's exact test, "
         "Holm-adjusted p < gates.no_significant_regression.alpha over the variants).", _on_summary(_no_significant_regression)),
    Gate("non_inferiority_vs_baseline_variant", SUMMARY,
         "Every variant is shown no worse than `run.baseline_variant` by more than gates.non_inferiority.margin "
         "(the lower bound of the pass-rate delta's 95% interval above -margin).", _on_summary(_non_inferiority)),
    Gate("non_inferiority_vs_promoted_baseline", DRIFT,
         "Every variant is shown no worse than in the promoted baseline run by more than "
         "gates.non_inferiority.margin (passes while no run is promoted).", _on_drift(_non_inferior_drift)),
    Gate("no_regressions_vs_promoted_baseline", DRIFT,
         "No case that passed in the eval's promoted baseline run fails in this run "
         "(passes while no run is promoted).", _on_drift(_no_drift_regressions)),
    Gate("no_significant_regression_vs_promoted_baseline", DRIFT,
         "No variant is significantly worse than in the eval's promoted baseline run (McNemar's exact "
         "test, Holm-adjusted p < gates.no_significant_regression.alpha over the variants; passes while "
         "no run is promoted).",
         _on_drift(_no_significant_drift)),
)


__all__ = ["DRIFT", "GATES", "SUMMARY", "Gate", "GateVerdict", "JudgedGate", "Json", "Markdown", "RunFiles",
           "blocked", "judge_gates"]
