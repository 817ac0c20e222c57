"""Markdown renderings of a RunSummary: the report.md file and Dagster metadata tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalh_pipeline.models import RunSummary

MAX_LISTED_CASES = 50


def text_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A plain-text table (first column left-aligned, the others right-aligned), as lines."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(cells, widths)))

    return [line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def variants_table(summary: RunSummary) -> str:
    lines = [
        "| variant | cases | passed | errored | pass rate | avg latency (ms) | avg cost (USD) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for v in summary.variants:
        cost = f"{v.avg_cost_usd:.6f}" if v.avg_cost_usd is not None else "–"
        lines.append(
            f"| {v.name} | {v.cases_total} | {v.cases_passed} | {v.cases_errored} | "
            f"{v.pass_rate:.1%} | {v.avg_latency_ms:.1f} | {cost} |"
        )
    return "\n".join(lines)


def evaluators_table(summary: RunSummary) -> str:
    names = [v.name for v in summary.variants]
    lines = ["| evaluator | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for rollup in summary.by_evaluator:
        cells = []
        for name in names:
            r = rollup.by_variant.get(name)
            cells.append("–" if r is None else f"{r.pass_rate:.1%}")
        lines.append(f"| {rollup.evaluator} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def comparison_section(summary: RunSummary) -> str:
    comp = summary.comparison
    if comp is None:
        return "No baseline variant configured (`run.baseline_variant`)."
    lines = [f"Baseline: `{comp.baseline}` ({comp.kind})", ""]
    lines += ["| variant | pass-rate delta | latency delta (ms) | regressions | improvements |",
              "|---|---:|---:|---:|---:|"]
    for d in comp.deltas:
        lines.append(f"| {d.variant} | {d.pass_rate_delta:+.1%} | {d.avg_latency_delta_ms:+.1f} | "
                     f"{len(d.regressions)} | {len(d.improvements)} |")
    for d in comp.deltas:
        for label, ids in (("Regressions", d.regressions), ("Improvements", d.improvements)):
            if ids:
                shown = ", ".join(f"`{i}`" for i in ids[:MAX_LISTED_CASES])
                more = f" … and {len(ids) - MAX_LISTED_CASES} more" if len(ids) > MAX_LISTED_CASES else ""
                lines += ["", f"**{label} in `{d.variant}`** ({len(ids)}): {shown}{more}"]
    return "\n".join(lines)


def render_report(summary: RunSummary, eval_name: str) -> str:
    """The run's report.md: regressions first, then the per-variant and per-evaluator tables."""
    return "\n".join([
        f"# {eval_name} — run `{summary.run_id}`",
        "",
        f"{summary.cases_total} cases · started {summary.started_at:%Y-%m-%d %H:%M:%S} UTC · "
        f"config `{summary.config_hash[:12]}`",
        "",
        "## Comparison",
        "",
        comparison_section(summary),
        "",
        "## Variants",
        "",
        variants_table(summary),
        "",
        "## Evaluators (pass rate)",
        "",
        evaluators_table(summary),
        "",
    ])
