"""The run summary as DuckDB SQL over traces.jsonl and results.jsonl.

A cell is one (case, variant, sample). It passes when its results satisfy
``pass_criteria`` (default: every evaluator passed; an errored evaluator counts as failed;
a cell without results fails). For the baseline comparison a case passes on a variant
when all of its samples passed.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import duckdb

from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.models import (
    ComparisonReport,
    EvaluatorRollup,
    EvaluatorVariantRollup,
    RunSummary,
    VariantDelta,
    VariantSummary,
)
from evalh_pipeline.queries.sql import RESULT_COLUMNS, TRACE_COLUMNS, connect, load_table
from evalh_pipeline.store.run_dir import RunDirectory

# The one definition of a cell's verdict, shared by summary, compare and inspect. Formatted
# with the table names ({cells}, {traces}, {results}); $all_required / $any_required are
# the run's pass_criteria.
CELLS_SQL = """
CREATE TEMP TABLE {cells} AS
WITH traces AS (
    SELECT case_id, variant_name, coalesce(sample, 0) AS sample, latency_ms,
           error.type AS error_type, metrics.cost_usd AS cost_usd,
           metrics.token_input AS token_input, metrics.token_output AS token_output,
           started_at, finished_at
    FROM {traces}
),
results AS (
    SELECT case_id, variant_name, coalesce(sample, 0) AS sample, evaluator,
           coalesce(passed, false) AND error IS NULL AS ok
    FROM {results}
),
verdicts AS (
    SELECT case_id, variant_name, sample,
           count(*) AS n_results,
           bool_and(ok) AS all_ok,
           count(*) FILTER (WHERE ok AND list_contains($all_required, evaluator)) AS required_ok,
           count(*) FILTER (WHERE ok AND list_contains($any_required, evaluator)) AS any_ok
    FROM results
    GROUP BY ALL
)
SELECT t.*,
       coalesce(v.n_results, 0) > 0 AND CASE
           WHEN len($all_required) = 0 AND len($any_required) = 0 THEN v.all_ok
           ELSE v.required_ok = len($all_required) AND (len($any_required) = 0 OR v.any_ok > 0)
       END AS passed
FROM traces t LEFT JOIN verdicts v USING (case_id, variant_name, sample)
"""

VARIANTS_SQL = """
SELECT variant_name,
       count(*) AS cells,
       count(*) FILTER (WHERE passed) AS passed,
       count(*) FILTER (WHERE error_type IS NOT NULL) AS errored,
       avg(latency_ms) AS avg_latency_ms,
       avg(cost_usd) AS avg_cost_usd,
       avg(token_input) AS avg_tokens_input,
       avg(token_output) AS avg_tokens_output,
       min(started_at) AS first_started,
       max(finished_at) AS last_finished
FROM {cells} GROUP BY variant_name
"""

EVALUATORS_SQL = """
SELECT evaluator, variant_name,
       avg(CASE WHEN coalesce(passed, false) AND error IS NULL THEN 1.0 ELSE 0.0 END) AS pass_rate,
       avg(score) AS avg_score
FROM result_rows GROUP BY evaluator, variant_name
"""

FLIPS_SQL = """
WITH per_case AS (
    SELECT case_id, variant_name, bool_and(passed) AS passed FROM cells GROUP BY case_id, variant_name
),
base AS (SELECT case_id, passed FROM per_case WHERE variant_name = $baseline)
SELECT v.variant_name,
       list(DISTINCT c.case_id ORDER BY c.case_id) FILTER (WHERE b.passed AND NOT coalesce(p.passed, false)) AS regressions,
       list(DISTINCT c.case_id ORDER BY c.case_id) FILTER (WHERE NOT coalesce(b.passed, false) AND p.passed) AS improvements
FROM (SELECT DISTINCT variant_name FROM cells WHERE variant_name <> $baseline) v
CROSS JOIN (SELECT DISTINCT case_id FROM cells) c
LEFT JOIN base b ON b.case_id = c.case_id
LEFT JOIN per_case p ON p.case_id = c.case_id AND p.variant_name = v.variant_name
GROUP BY v.variant_name
"""


def create_cells(
    con: duckdb.DuckDBPyConnection,
    pass_criteria: PassCriteria,
    *,
    cells: str = "cells",
    traces: str = "trace_rows",
    results: str = "result_rows",
) -> None:
    """Create the ``cells`` table (one row per trace, with its ``passed`` verdict)."""
    con.execute(
        CELLS_SQL.format(cells=cells, traces=traces, results=results),
        {"all_required": pass_criteria.all_required, "any_required": pass_criteria.any_required},
    )


def load_cells(
    con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, pass_criteria: PassCriteria, *, suffix: str = ""
) -> None:
    """Load a run's traces and results as ``trace_rows{suffix}`` / ``result_rows{suffix}`` and
    derive ``cells{suffix}`` from them under ``pass_criteria``."""
    load_table(con, f"trace_rows{suffix}", run_dir.traces, TRACE_COLUMNS, str(run_dir.traces))
    load_table(con, f"result_rows{suffix}", run_dir.results, RESULT_COLUMNS, str(run_dir.results))
    create_cells(con, pass_criteria, cells=f"cells{suffix}", traces=f"trace_rows{suffix}",
                 results=f"result_rows{suffix}")


def variant_summary(row: tuple) -> VariantSummary:
    """A VariantSummary from the first eight columns of a VARIANTS_SQL row."""
    name, cells, passed, errored, latency, cost, tokens_in, tokens_out = row[:8]
    return VariantSummary(
        name=name,
        cases_total=cells,
        cases_passed=passed,
        cases_errored=errored,
        pass_rate=passed / cells if cells else 0.0,
        avg_latency_ms=latency or 0.0,
        avg_cost_usd=cost,
        avg_tokens_input=tokens_in,
        avg_tokens_output=tokens_out,
    )


def summarize_run(
    run_dir: RunDirectory,
    *,
    variant_order: list[str],
    pass_criteria: PassCriteria,
    baseline_variant: str | None,
    config_path: str,
    config_hash: str,
    cases_total: int,
    metadata: dict[str, Any] | None = None,
) -> RunSummary:
    """Build the RunSummary of a run directory from its JSONL files."""
    con = connect()
    load_cells(con, run_dir, pass_criteria)
    rows = {r[0]: r for r in con.execute(VARIANTS_SQL.format(cells="cells")).fetchall()}
    order = [v for v in variant_order if v in rows] + sorted(set(rows) - set(variant_order))
    variants = [variant_summary(rows[name]) for name in order]
    rollups: dict[str, dict[str, EvaluatorVariantRollup]] = {}
    for evaluator, variant, rate, score in con.execute(EVALUATORS_SQL).fetchall():
        rollups.setdefault(evaluator, {})[variant] = EvaluatorVariantRollup(pass_rate=rate, avg_score=score)

    comparison = None
    if baseline_variant is not None and baseline_variant in rows:
        by_name = {v.name: v for v in variants}
        flips = {r[0]: r for r in con.execute(FLIPS_SQL, {"baseline": baseline_variant}).fetchall()}
        base = by_name[baseline_variant]
        deltas = [
            VariantDelta(
                variant=v.name,
                pass_rate_delta=v.pass_rate - base.pass_rate,
                avg_latency_delta_ms=v.avg_latency_ms - base.avg_latency_ms,
                regressions=(flips.get(v.name) or (None, [], []))[1] or [],
                improvements=(flips.get(v.name) or (None, [], []))[2] or [],
            )
            for v in variants if v.name != baseline_variant
        ]
        comparison = ComparisonReport(
            baseline=baseline_variant,
            deltas=deltas,
            kind="ad_hoc",
            regressions_count=sum(len(d.regressions) for d in deltas),
            improvements_count=sum(len(d.improvements) for d in deltas),
        )
    starts = [rows[n][8] for n in order if rows[n][8]]
    ends = [rows[n][9] for n in order if rows[n][9]]
    now = datetime.now(timezone.utc)
    con.close()
    return RunSummary(
        run_id=run_dir.run_id,
        started_at=min(starts) if starts else now,
        finished_at=max(ends) if ends else now,
        config_path=config_path,
        config_hash=config_hash,
        cases_total=cases_total,
        variants=variants,
        by_evaluator=[EvaluatorRollup(evaluator=name, by_variant=by) for name, by in rollups.items()],
        comparison=comparison,
        metadata=metadata or {},
    )


def run_pass_criteria(run_dir: RunDirectory) -> PassCriteria:
    """The pass_criteria a run was made with, from its config.yaml snapshot (default when absent)."""
    from evalh_pipeline.store.yaml_files import load_yaml_text

    if not run_dir.config_yaml.exists():
        return PassCriteria()
    raw = load_yaml_text(run_dir.config_yaml.read_text(encoding="utf-8")) or {}
    return PassCriteria.model_validate(raw.get("pass_criteria") or {})
