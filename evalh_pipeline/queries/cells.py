"""The cell verdict, shared by summary, compare, drift and inspect.

A cell is one (case, variant, sample). It passes when its trace has no error and its
results satisfy the run's ``pass_criteria`` (default: every evaluator passed; an errored
evaluator counts as failed; a cell without results fails). ``evaluator_verdicts`` keeps
each evaluator's own verdict on the cell, for the per-evaluator paired statistics.

A case's pass fraction on a variant is the share of its samples (cells) that passed; with
one sample per case it is 0 or 1. Comparisons pair cases by their pass fractions
(:data:`PASS_FRACTIONS_SQL`, :data:`EVALUATOR_FRACTIONS_SQL`).

This module imports neither pydantic nor the config loader: ``evalh compare`` and
``evalh drift`` are whole processes that must start fast.

The summary also saves its cells table as ``.cells/<key>.parquet`` in the run directory,
a cache keyed on the size, mtime and inode of traces.jsonl and results.jsonl, the pass criteria
and this SQL. ``load_cells`` reads it when the key still matches (compare and drift of two
10k-case runs then skip parsing ~70 MB of JSON) and otherwise computes the cells from the
JSONL, which stay the only source of truth: the cache is never read when stale, and
deleting it changes nothing but the time.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
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
           count(*) FILTER (WHERE ok AND list_contains($any_required, evaluator)) AS any_ok,
           list(struct_pack(evaluator := evaluator, ok := ok)) AS evaluator_verdicts
    FROM results
    GROUP BY ALL
)
SELECT t.*, v.evaluator_verdicts,
       -- An errored cell never passes, whatever its evaluators made of a partial answer.
       t.error_type IS NULL AND coalesce(v.n_results, 0) > 0 AND CASE
           WHEN len($all_required) = 0 AND len($any_required) = 0 THEN v.all_ok
           ELSE v.required_ok = len($all_required) AND (len($any_required) = 0 OR v.any_ok > 0)
       END AS passed
FROM traces t LEFT JOIN verdicts v USING (case_id, variant_name, sample)
"""

# Per variant: cases (a case passes when all of its samples passed, and is errored when any
# sample errored), then per-cell averages, then the samples themselves (reported separately
# when run.samples_per_case > 1): columns 10-13.
VARIANTS_SQL = """
WITH per_case AS (
    SELECT variant_name, case_id, bool_and(coalesce(passed, false)) AS passed,
           bool_or(error_type IS NOT NULL) AS errored, count(*) AS samples
    FROM {cells} GROUP BY variant_name, case_id
), per_variant AS (
    SELECT variant_name, count(*) AS cases, count(*) FILTER (WHERE passed) AS cases_passed,
           count(*) FILTER (WHERE errored) AS cases_errored, max(samples) AS max_samples
    FROM per_case GROUP BY variant_name
)
SELECT c.variant_name,
       any_value(v.cases) AS cases,
       any_value(v.cases_passed) AS passed,
       any_value(v.cases_errored) AS errored,
       avg(c.latency_ms) AS avg_latency_ms,
       avg(c.cost_usd) AS avg_cost_usd,
       avg(c.token_input) AS avg_tokens_input,
       avg(c.token_output) AS avg_tokens_output,
       min(c.started_at) AS first_started,
       max(c.finished_at) AS last_finished,
       count(*) AS samples_total,
       count(*) FILTER (WHERE c.passed) AS samples_passed,
       count(*) FILTER (WHERE c.error_type IS NOT NULL) AS samples_errored,
       any_value(v.max_samples) AS max_samples
FROM {cells} c JOIN per_variant v ON v.variant_name = c.variant_name GROUP BY c.variant_name
"""


# Per (variant, case): samples, passing samples and the pass fraction.
PASS_FRACTIONS_SQL = """
SELECT variant_name, case_id, count(*) AS samples,
       count(*) FILTER (WHERE coalesce(passed, false)) AS passed_samples,
       avg(CASE WHEN coalesce(passed, false) THEN 1.0 ELSE 0.0 END) AS fraction
FROM {cells} GROUP BY variant_name, case_id
"""

# Per (evaluator, variant, case): the share of the case's samples that evaluator passed
# (cells without a result from it do not count).
EVALUATOR_FRACTIONS_SQL = """
SELECT v.evaluator, variant_name, case_id,
       avg(CASE WHEN v.ok THEN 1.0 ELSE 0.0 END) AS fraction
FROM (SELECT variant_name, case_id, unnest(evaluator_verdicts) AS v FROM {cells})
GROUP BY ALL
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
               suffix: str = "", cached: bool = False) -> None:
    """Create ``cells{suffix}`` for a run under ``pass_criteria``.

    With ``cached``, from the run's fresh cells cache when there is one (then only the
    ``cells`` table exists); otherwise (and always without ``cached``) the traces and
    results are loaded as ``trace_rows{suffix}`` / ``result_rows{suffix}`` and the cells
    derived from them.
    """
    if cached:
        cache = cells_cache_path(run_dir, pass_criteria)
        if cache is not None and cache.exists():
            con.execute(f"CREATE TEMP TABLE cells{suffix} AS SELECT * FROM read_parquet('{_literal(cache)}')")
            return
    load_table(con, f"trace_rows{suffix}", run_dir.traces, TRACE_COLUMNS, str(run_dir.traces))
    load_table(con, f"result_rows{suffix}", run_dir.results, RESULT_COLUMNS, str(run_dir.results))
    create_cells(con, pass_criteria, cells=f"cells{suffix}", traces=f"trace_rows{suffix}",
                 results=f"result_rows{suffix}")


def _literal(path: Path) -> str:
    return str(path).replace("'", "''")


def _identity(path: Path) -> tuple[int, int, int] | None:
    """Size, mtime and inode: a file appended to, rewritten or replaced by rename reads as another."""
    if not path.exists():
        return None
    stat = path.stat()
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def cells_cache_path(run_dir: RunDirectory, pass_criteria: PassRule) -> Path | None:
    """Where the cells cache for the run's current files and ``pass_criteria`` is (None: no traces)."""
    try:
        stats = [_identity(p) for p in (run_dir.traces, run_dir.results)]
    except OSError:
        return None
    if stats[0] is None:
        return None
    key = hashlib.sha256(json.dumps({
        "files": stats, "all_required": list(pass_criteria.all_required),
        "any_required": list(pass_criteria.any_required), "sql": CELLS_SQL,
    }).encode()).hexdigest()[:32]
    return run_dir.cells_cache / f"{key}.parquet"


def save_cells_cache(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, pass_criteria: PassRule, *,
                     cells: str = "cells") -> None:
    """Save the ``cells`` table as the run's cells cache (atomically; older caches removed).

    The key is taken before writing and checked after: if the JSONL changed meanwhile, no
    cache is kept.
    """
    target = cells_cache_path(run_dir, pass_criteria)
    if target is None:
        return
    target.parent.mkdir(exist_ok=True)
    tmp = target.with_name(f".{target.stem}.{os.getpid()}.tmp")
    try:
        con.execute(f"COPY (SELECT * FROM {cells}) TO '{_literal(tmp)}' (FORMAT parquet)")
        if cells_cache_path(run_dir, pass_criteria) != target:
            return  # the run's files changed while the cells were read: this cache would be stale
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    for old in target.parent.glob("*.parquet"):
        if old != target:
            old.unlink(missing_ok=True)


def run_pass_criteria(run_dir: RunDirectory) -> SnapshotPassCriteria:
    """The pass_criteria a run was made with, from its config.yaml snapshot (default when absent).

    The snapshot was validated when the run was made; only its shape is checked here.
    """
    from evalh_pipeline.common.yaml_files import load_yaml_text

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
