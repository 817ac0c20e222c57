"""The cell verdict, shared by summary, compare, drift and inspect.

A cell is one (case, variant, sample). It passes when its results satisfy the run's
``pass_criteria`` (default: every evaluator passed; an errored evaluator counts as
failed; a cell without results fails).

This module imports neither pydantic nor the config loader: ``evalh compare`` and
``evalh drift`` are whole processes that must start fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from evalh_pipeline.queries.sql import RESULT_COLUMNS, TRACE_COLUMNS, load_table
from evalh_pipeline.store.run_dir import RunDirectory

if TYPE_CHECKING:
    import duckdb

# Formatted with the table names ({cells}, {traces}, {results}); $all_required /
# $any_required are the run's pass_criteria.
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


class PassRule(Protocol):
    """What the cell verdict needs of ``pass_criteria`` (config.schema.PassCriteria fits)."""

    all_required: list[str]
    any_required: list[str]


@dataclass(frozen=True)
class SnapshotPassCriteria:
    """A run's ``pass_criteria`` as read back from its config.yaml snapshot."""

    all_required: list[str] = field(default_factory=list)
    any_required: list[str] = field(default_factory=list)


def create_cells(
    con: duckdb.DuckDBPyConnection,
    pass_criteria: PassRule,
    *,
    cells: str = "cells",
    traces: str = "trace_rows",
    results: str = "result_rows",
) -> None:
    """Create the ``cells`` table (one row per trace, with its ``passed`` verdict)."""
    con.execute(
        CELLS_SQL.format(cells=cells, traces=traces, results=results),
        {"all_required": list(pass_criteria.all_required), "any_required": list(pass_criteria.any_required)},
    )


def load_cells(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, pass_criteria: PassRule, *,
               suffix: str = "") -> None:
    """Load a run's traces and results as ``trace_rows{suffix}`` / ``result_rows{suffix}`` and
    derive ``cells{suffix}`` from them under ``pass_criteria``."""
    load_table(con, f"trace_rows{suffix}", run_dir.traces, TRACE_COLUMNS, str(run_dir.traces))
    load_table(con, f"result_rows{suffix}", run_dir.results, RESULT_COLUMNS, str(run_dir.results))
    create_cells(con, pass_criteria, cells=f"cells{suffix}", traces=f"trace_rows{suffix}",
                 results=f"result_rows{suffix}")


def run_pass_criteria(run_dir: RunDirectory) -> SnapshotPassCriteria:
    """The pass_criteria a run was made with, from its config.yaml snapshot (default when absent).

    The snapshot was validated when the run was made; only its shape is checked here.
    """
    from evalh_pipeline.store.yaml_files import load_yaml_text

    if not run_dir.config_yaml.exists():
        return SnapshotPassCriteria()
    raw = load_yaml_text(run_dir.config_yaml.read_text(encoding="utf-8")) or {}
    criteria = raw.get("pass_criteria") or {}
    if not isinstance(criteria, dict):
        raise ValueError(f"{run_dir.config_yaml}: pass_criteria must be a mapping")
    lists = {}
    for key in ("all_required", "any_required"):
        names = criteria.get(key) or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"{run_dir.config_yaml}: pass_criteria.{key} must be a list of evaluator names")
        lists[key] = names
    return SnapshotPassCriteria(**lists)
