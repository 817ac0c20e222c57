"""Markdown renderings: report.md and drift.md, and the tables shown as Dagster metadata."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalh_pipeline.stats.paired import format_p_value, power_line

if TYPE_CHECKING:
    from evalh_pipeline.models import RunSummary
    from evalh_pipeline.queries.compare import RunComparison

MAX_LISTED_CASES = 50


def text_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A plain-text table (first column left-aligned, the others right-aligned), as lines."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(cells, widths)))

    return [line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def rate_ci_text(interval: list[float] | None) -> str:
    """A 95% interval of a rate as ``43.2–70.0%`` (``–`` without one)."""
    if not interval:
        return "–"
    return f"{interval[0]:.1%}–{interval[1]:.1%}".replace("%–", "–")


def design_effect_text(deff: float | None) -> str:
    """``design effect 2.41``; one below 1 (clusters more alike than chance) is taken as 1."""
    if deff is None:
        return "design effect –"
    return f"design effect {deff:.2f}" + (" (below 1: taken as 1)" if deff < 1 else "")


def rate_with_ci(rate: float, interval: list[float] | None) -> str:
    """``57.1% (95% CI 43.2–70.0%)``: a pass rate with its interval beside it."""
    return f"{rate:.1%}" + (f" (95% CI {rate_ci_text(interval)})" if interval else "")


def variants_table(summary: RunSummary) -> str:
    lines = [
        "| variant | cases | passed | errored | pass rate | 95% CI | avg latency (ms) | avg cost (USD) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for v in summary.variants:
        cost = f"{v.avg_cost_usd:.6f}" if v.avg_cost_usd is not None else "–"
        lines.append(
            f"| {v.name} | {v.cases_total} | {v.cases_passed} | {v.cases_errored} | "
            f"{v.pass_rate:.1%} | {rate_ci_text(v.pass_rate_ci)} | {v.avg_latency_ms:.1f} | {cost} |"
        )
    clustered = [v for v in summary.variants if v.clusters is not None]
    if clustered:
        lines += ["", "Intervals are clustered (`run.cluster_by`): "
                  + "; ".join(f"`{v.name}` {v.clusters} clusters, {design_effect_text(v.design_effect)}" for v in clustered)
                  + " (Wilson's interval on cases / design effect)."]
    return "\n".join(lines)


def evaluators_table(summary: RunSummary) -> str:
    names = [v.name for v in summary.variants]
    lines = ["| evaluator | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for rollup in summary.by_evaluator:
        cells = []
        for name in names:
            r = rollup.by_variant.get(name)
            cells.append("–" if r is None else f"{r.pass_rate:.1%}" + (f" ({r.errored} errored)" if r.errored else "")
                         + corrected_text(r.pass_rate_corrected) + corrected_delta_text(r.pass_rate_delta_corrected))
        lines.append(f"| {rollup.evaluator} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def corrected_text(corrected: Any) -> str:
    """`` · corrected 55.1% (41.2–69.0%)`` for a CorrectedPassRate, "" without one."""
    if corrected is None:
        return ""
    return f" · corrected {corrected.estimate:.1%} ({corrected.ci_low:.1%}–{corrected.ci_high:.1%})"


def corrected_delta_text(corrected: Any) -> str:
    """`` · vs baseline, corrected -12.0 pts (-25.1 to +1.2)`` for a corrected delta, "" without one."""
    if corrected is None:
        return ""
    return (f" · vs baseline, corrected {corrected.estimate * 100:+.1f} pts "
            f"({corrected.ci_low * 100:+.1f} to {corrected.ci_high * 100:+.1f})")


def calibration_lines(summary: RunSummary) -> list[str]:
    """One line per evaluator with human labels (:func:`calibration_line`)."""
    return [line for rollup in summary.by_evaluator if (line := calibration_line(rollup)) is not None]


def calibration_line(rollup: Any) -> str | None:
    """An EvaluatorRollup's agreement with human labels, kappa, sensitivity and specificity,
    and whether its pass rates were corrected (and if not, why); None without labels."""
    c = rollup.calibration
    if c is None:
        return None
    parts = [f"{c.labels} label(s)"]
    if c.agreement is not None:
        parts.append(f"agreement {c.agreement:.1%}")
    if c.kappa is not None and c.human_pass_rate is not None:
        parts.append(f"Cohen's kappa {c.kappa:.2f} (human pass rate {c.human_pass_rate:.1%})")
    for name, rate in (("sensitivity", c.sensitivity), ("specificity", c.specificity)):
        parts.append(f"{name} –" if rate is None else
                     f"{name} {rate.estimate:.1%} ({rate.ci_low:.1%}–{rate.ci_high:.1%}, n={rate.n})")
    verdict = c.note or "pass rates corrected (Rogan–Gladen; the interval includes the labels' uncertainty)"
    return f"{rollup.evaluator}: " + ", ".join(parts) + f"; {verdict}"


def points(delta: float) -> float:
    """A pass-rate delta (a fraction) in percentage points, rounded to one decimal: -0.19999999999999996 -> -20.0."""
    return round(delta * 100, 1) + 0.0  # + 0.0: never -0.0


def pp(delta: float) -> str:
    """A pass-rate delta in percentage points: ``-4.0 pp``."""
    return f"{points(delta):+.1f} pp"


def ci_text(stats: Any) -> str:
    """A PairedStats' 95% interval as ``-6.1 to -1.9 pp`` (``–`` without one)."""
    if stats is None or stats.delta_ci95 is None:
        return "–"
    low, high = stats.delta_ci95
    return f"{round(low * 100, 1) + 0.0:.1f} to {round(high * 100, 1) + 0.0:.1f} pp"


def _p(stats: Any) -> str:
    if stats is None or stats.mcnemar_p_value is None:
        return "–"
    return format_p_value(stats.mcnemar_p_value).removeprefix("p = ")


def _p_adjusted(stats: Any) -> str:
    if stats is None or stats.p_value_adjusted is None:
        return "–"
    return format_p_value(stats.p_value_adjusted).removeprefix("p = ")


def _mde(stats: Any) -> str:
    if stats is None or stats.mde is None:
        return "–"
    return f"{round(stats.mde * 100, 1) + 0.0:.1f} pp"


def reading(stats: Any) -> str:
    """One comparison in words: its verdict, what it can see and how it was clustered."""
    text: str = stats.verdict
    if stats.mde is not None:
        text += f"; {power_line(stats.mde)}"
    if stats.clusters is not None and stats.design_effect is not None:
        text += f" ({stats.clusters} clusters, {design_effect_text(stats.design_effect)})"
    return text


def gate_and_test_line(regressed: int, stats: Any) -> str | None:
    """Why a count of regressed cases and a "noise" verdict can both hold, in one line; None
    when they do not disagree (no regressed case, or the regression is significant)."""
    if not regressed or stats is None or stats.mcnemar_p_value is None or stats.regression_at(stats.alpha):
        return None
    return (f"both hold: the regression gates count cases that went from pass to fail ({regressed} here; any one "
            f"fails them), the significance test asks whether {stats.cases_compared} cases are enough to rule out "
            f"chance ({format_p_value(stats.mcnemar_p_value)}: they are not)")


def significance_lines(deltas: list[Any], baseline: str) -> list[str]:
    """Each variant's verdict in words, then a per-evaluator table of the same statistics.

    ``deltas`` are VariantDelta models (a summary's or a comparison's)."""
    lines: list[str] = []
    for d in deltas:
        if d.significance is not None:
            lines.append(f"- `{d.variant}` vs `{baseline}`: {reading(d.significance)}")
    rows = [(d.variant, name, stats) for d in deltas for name, stats in d.by_evaluator.items()]
    if rows:
        lines += ["", "Per evaluator (paired over the cases both sides have; p (BH): Benjamini-Hochberg-adjusted "
                  "over this table):", "",
                  "| variant | evaluator | cases | worse | better | delta | 95% CI | MDE | McNemar p | p (BH) | verdict |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for variant, name, stats in rows:
            lines.append(f"| {variant} | {name} | {stats.cases_compared} | {stats.cases_worse} | {stats.cases_better} | "
                         f"{pp(stats.pass_rate_delta)} | {ci_text(stats)} | {_mde(stats)} | {_p(stats)} | "
                         f"{_p_adjusted(stats)} | {_words(stats.verdict)} |")
    scored = [(variant, name, stats) for variant, name, stats in rows if stats.score_delta is not None]
    if scored:
        lines += ["", "Scores per evaluator (mean score delta, paired; Wilcoxon signed-rank test):", "",
                  "| variant | evaluator | score delta | 95% CI | Wilcoxon p |", "|---|---|---:|---:|---:|"]
        for variant, name, stats in scored:
            ci = stats.score_delta_ci95
            p = format_p_value(stats.wilcoxon_p_value).removeprefix("p = ") if stats.wilcoxon_p_value is not None else "–"
            lines.append(f"| {variant} | {name} | {stats.score_delta:+.3f} | "
                         + (f"{ci[0]:+.3f} to {ci[1]:+.3f}" if ci else "–") + f" | {p} |")
    return lines


def _words(verdict: str) -> str:
    return verdict.rsplit(": ", 1)[-1]


def comparison_section(summary: RunSummary, baseline_variant: str | None = None) -> str:
    """The baseline-variant comparison; without one, why there is none (never guessed)."""
    comp = summary.comparison
    if comp is None:
        if baseline_variant is None:
            return "No baseline variant configured (`run.baseline_variant`)."
        return (f"No comparison: the baseline variant `{baseline_variant}` has no traces in this run "
                f"({completeness_line(summary)}).")
    lines = [f"Baseline: `{comp.baseline}` ({comp.kind})", ""]
    lines += ["| variant | pass-rate delta | 95% CI | MDE (80% power) | McNemar p | latency delta (ms) | regressions | "
              "improvements |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for d in comp.deltas:
        lines.append(f"| {d.variant} | {pp(d.pass_rate_delta)} | {ci_text(d.significance)} | {_mde(d.significance)} | "
                     f"{_p(d.significance)} | {d.avg_latency_delta_ms:+.1f} | {len(d.regressions)} | "
                     f"{len(d.improvements)} |")
    significance = significance_lines(comp.deltas, comp.baseline)
    if significance:
        lines += ["", *significance]
    for d in comp.deltas:
        for label, ids in (("Regressions", d.regressions), ("Improvements", d.improvements)):
            if ids:
                shown = ", ".join(f"`{i}`" for i in ids[:MAX_LISTED_CASES])
                more = f" … and {len(ids) - MAX_LISTED_CASES} more" if len(ids) > MAX_LISTED_CASES else ""
                lines += ["", f"**{label} in `{d.variant}`** ({len(ids)}): {shown}{more}"]
    return "\n".join(lines)


def repeats_section(summary: RunSummary) -> str:
    """pass@k, pass^k and flaky cases per variant (runs with several samples per case), or ""."""
    repeated = [(v.name, v.repeats) for v in summary.variants if v.repeats is not None]
    if not repeated:
        return ""
    ks = sorted({k for _, r in repeated for k in r.pass_at_k})
    lines = [f"{max(r.samples_per_case for _, r in repeated)} samples per case. pass@k: the chance that at "
             "least one of k samples passes; pass^k: that all k pass (unbiased estimators). A flaky case's samples "
             "disagree.", "",
             "| variant | " + " | ".join(f"pass@{k}" for k in ks) + " | " + " | ".join(f"pass^{k}" for k in ks)
             + " | flaky cases |",
             "|---|" + "---:|" * (2 * len(ks) + 1)]
    for name, r in repeated:
        cells = [f"{r.pass_at_k[k]:.1%}" if k in r.pass_at_k else "–" for k in ks]
        cells += [f"{r.pass_hat_k[k]:.1%}" if k in r.pass_hat_k else "–" for k in ks]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {len(r.flaky_cases)} |")
    for name, r in repeated:
        fractions = ", ".join(f"{key}: {count}" for key, count in r.case_pass_fractions.items())
        lines += ["", f"Cases of `{name}` by samples passed: {fractions}"]
        if r.flaky_cases:
            lines.append(_listed(name, r.flaky_cases).replace("- ", "Flaky in ", 1))
    return "\n".join(lines)


def completeness_line(summary: RunSummary) -> str:
    """``complete: …`` / ``incomplete: …`` (or "completeness not recorded" for old summaries)."""
    return summary.completeness.describe() if summary.completeness else "completeness not recorded"


def render_report(summary: RunSummary, eval_name: str, baseline_variant: str | None = None) -> str:
    """The run's report.md: completeness and regressions first, then the per-variant and per-evaluator tables."""
    incomplete = summary.completeness is not None and not summary.completeness.complete
    return "\n".join([
        f"# {eval_name} — run `{summary.run_id}`",
        "",
        *([f"**INCOMPLETE RUN** — {completeness_line(summary)}. Figures cover only the cells that have a trace; "
           "finish it with `evalh run <eval.yaml> --resume <run_dir>`.", ""] if incomplete else []),
        *([f"**NOT JUDGED** — {summary.not_judged.describe()}. Their cells are left out of the pass rates and "
           "comparisons; judge them again with `evalh retry-failed <run_dir> --include-evaluator-failures` "
           "(no system call).", ""] if summary.not_judged is not None else []),
        f"{summary.cases_total} cases · started {summary.started_at:%Y-%m-%d %H:%M:%S} UTC · "
        f"config `{summary.config_hash[:12]}`"
        + (f" · {summary.reused_traces} trace(s) reused from {', '.join(f'`{r}`' for r in summary.reused_from)}"
           if summary.reused_traces else ""),
        "",
        "## Comparison",
        "",
        comparison_section(summary, baseline_variant),
        "",
        "## Variants",
        "",
        variants_table(summary),
        "",
        "## Evaluators (pass rate)",
        "",
        evaluators_table(summary),
        "",
        *(["## Judge calibration (human labels)", "", *(f"- {line}" for line in calibration), ""]
          if (calibration := calibration_lines(summary)) else []),
        *(["## Repeats", "", repeats, ""] if (repeats := repeats_section(summary)) else []),
    ])


def drift_markdown(eval_name: str, run_id: str, report: RunComparison | None, rejudge: str | None = None,
                   promote_path: str | None = None) -> str:
    """The run's drift.md: regressions against the promoted baseline first, then the per-variant moves
    (``rejudge``: the command that re-judges the baseline, shown when evaluator configs differ;
    ``promote_path``: the run's folder, for the promote command shown without a baseline)."""
    title = f"# {eval_name} — drift of run `{run_id}`"
    if report is None:
        # The command names this run's folder when known: one to paste, not a placeholder.
        return (f"{title}\n\nNo promoted baseline: nothing to compare with "
                f"(`evalh promote {promote_path or 'runs/<run_id>'}`).\n")
    comp = report.comparison
    only = report.evaluator_only_regressions
    lines = [title, "", f"Against the promoted baseline `{comp.baseline_run_id or report.run_a}`: "
             f"**{report.system_regressions_count} regression(s)**"
             + (f" (and {sum(len(c) for c in only.values())} evaluator-config-only)" if only else "")
             + f", {comp.improvements_count} improvement(s).", ""]
    if (not_judged := sum(v.cases_not_judged for v in report.variants)):
        lines += [f"{not_judged} case(s) could not be judged in the baseline or this run (a judge gave no "
                  "verdict): not compared.", ""]
    lines += ["## Regressions", ""]
    regressed = [(d.variant, [c for c in d.regressions if c not in set(only.get(d.variant, []))]) for d in comp.deltas]
    lines += [_listed(variant, ids) for variant, ids in regressed if ids] or ["None."]
    if report.evaluator_changes:
        lines += ["", "## Evaluator configs differ", "",
                  "The baseline and this run were judged with different configs of these evaluators: their "
                  "verdicts are not comparable.", "",
                  *(f"- {change.describe('the baseline', 'this run')}" for change in report.evaluator_changes)]
        if only:
            lines += ["", "Regressions with the same answers in both runs, where only an evaluator's config changed "
                      "(not regressions of the system):", "", *(_listed(v, ids) for v, ids in only.items())]
        if rejudge:
            lines += ["", f"Re-judge the baseline with today's evaluators (no system call): `{rejudge}`"]
    significance = significance_lines(comp.deltas, comp.baseline_run_id or report.run_a)
    if significance:
        lines += ["", "## Significance", "", *significance]
    lines += ["", "## Variants", "",
              "| variant | pass rate baseline → run | 95% CI (run) | pass-rate delta | latency delta (ms) | regressions | "
              "improvements |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for v in report.variants:
        lines.append(f"| {v.variant} | {v.a.pass_rate:.1%} → {v.b.pass_rate:.1%} | {rate_ci_text(v.b.pass_rate_ci)} | "
                     f"{pp(v.pass_rate_delta)} | "
                     f"{v.avg_latency_delta_ms:+.1f} | {v.regressions} | {v.improvements} |")
    for label, names in (("only in the baseline", report.variants_only_in_a), ("only in this run", report.variants_only_in_b)):
        if names:
            lines += ["", f"Variants {label} (not compared): {', '.join(f'`{n}`' for n in names)}"]
    improved = [d for d in comp.deltas if d.improvements]
    if improved:
        lines += ["", "## Improvements", "", *(_listed(d.variant, d.improvements) for d in improved)]
    return "\n".join(lines) + "\n"


def _listed(variant: str, ids: list[str]) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:MAX_LISTED_CASES])
    more = f" … and {len(ids) - MAX_LISTED_CASES} more" if len(ids) > MAX_LISTED_CASES else ""
    return f"- `{variant}` ({len(ids)}): {shown}{more}"
