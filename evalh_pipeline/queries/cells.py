"""The cell verdict, shared by summary, compare, drift and inspect.

A cell is one (case, variant, sample). It passes when its trace has no error and its
results satisfy the run's ``pass_criteria`` (default: every evaluator passed; an errored
evaluator counts as failed; a cell without results fails). A case's own evaluators (its
``evaluators:`` in the dataset) are required for its cells whatever ``pass_criteria`` says:
the criteria name the eval's evaluators, and a cell passes only if every evaluator of its
case passed too (promptfoo's rule: a test passes when all of its asserts pass). A cell with
a result that could not be judged (models/result.py NOT_JUDGED_ERRORS, of an evaluator that
decides it: one the criteria name, or any when they name none, or one of its case's own) has
no verdict (``not_judged``): pass counts and comparisons leave it out and count it. The ``verdicts`` table keeps
each evaluator's own verdict on each cell, for the per-evaluator rollups and paired
statistics.

A case's pass fraction on a variant is the share of its samples (cells) that passed; with
one sample per case it is 0 or 1. Comparisons pair cases by their pass fractions
(:data:`PASS_FRACTIONS_SQL`, :data:`EVALUATOR_FRACTIONS_SQL`).

The queries read two tables: ``cell_traces`` (one row per line of traces.jsonl, the columns
of :data:`CELL_TRACES_SQL`) and ``verdicts`` (one row per line of results.jsonl,
:data:`VERDICTS_SQL`). They come from the JSONL files, or from the run's cell store
(queries/cell_store.py: compact Parquet copies in ``.cells/``, which the summary keeps up to
date and compare and drift read while it matches the files). The JSONL stay the only source
of truth.

Rows become the DataModel's own records (models/summary.py: declared once, read here too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from evalh_pipeline.models import NOT_JUDGED_ERRORS, VariantSummary
from evalh_pipeline.queries.sql import RESULT_COLUMNS, TRACE_COLUMNS, load_table
from evalh_pipeline.stats.proportions import wilson_interval
from evalh_pipeline.store.case_index import case_evaluator_names
from evalh_pipeline.store.run_dir import RunDirectory

if TYPE_CHECKING:
    import duckdb

# What the queries read of each trace ({raw}: a table of TRACE_COLUMNS), in file order.
CELL_TRACES_SQL = """
SELECT case_id, variant_name, coalesce(sample, 0) AS sample, latency_ms,
       error.type AS error_type, metrics.cost_usd AS cost_usd,
       metrics.token_input AS token_input, metrics.token_output AS token_output,
       started_at, finished_at, reused_from
FROM {raw}
"""

# What the queries read of each result ({raw}: a table of RESULT_COLUMNS), in file order:
# ``ok`` is the evaluator's verdict on the cell (an errored evaluator did not pass);
# ``not_judged``: the evaluator could not judge (models/result.py NOT_JUDGED_ERRORS).
VERDICTS_SQL = f"""
SELECT case_id, variant_name, coalesce(sample, 0) AS sample, evaluator,
       coalesce(passed, false) AND error IS NULL AS ok, score, error IS NOT NULL AS errored,
       coalesce(error.type IN ({", ".join(f"'{t}'" for t in NOT_JUDGED_ERRORS)}), false) AS not_judged
FROM {{raw}}
"""

# Formatted with the table names ({cells}, {traces}, {verdicts}); $all_required /
# $any_required are the run's pass_criteria, $case_evaluators the names of its cases' own
# evaluators (each required for the cells of the cases that have it).
CELLS_SQL = """
CREATE TEMP TABLE {cells} AS
WITH per_cell AS (
    SELECT case_id, variant_name, sample,
           count(*) AS n_results,
           bool_and(ok) AS all_ok,
           -- A result that could not be judged, of an evaluator that decides the cell.
           bool_or(not_judged AND (len($all_required) + len($any_required) = 0
                                   OR list_contains($all_required, evaluator)
                                   OR list_contains($any_required, evaluator)
                                   OR list_contains($case_evaluators, evaluator))) AS not_judged,
           count(*) FILTER (WHERE ok AND list_contains($all_required, evaluator)) AS required_ok,
           count(*) FILTER (WHERE ok AND list_contains($any_required, evaluator)) AS any_ok,
           count(*) FILTER (WHERE NOT ok AND list_contains($case_evaluators, evaluator)) AS case_failed
    FROM {verdicts}
    GROUP BY ALL
)
SELECT t.*,
       -- An errored cell never passes, whatever its evaluators made of a partial answer.
       t.error_type IS NULL AND coalesce(v.n_results, 0) > 0 AND CASE
           WHEN len($all_required) = 0 AND len($any_required) = 0 THEN v.all_ok
           ELSE v.required_ok = len($all_required) AND (len($any_required) = 0 OR v.any_ok > 0)
                AND v.case_failed = 0
       END AS passed,
       -- No verdict: left out of pass counts and comparisons (an errored cell is decided: failed).
       t.error_type IS NULL AND coalesce(v.not_judged, false) AS not_judged
FROM {traces} t LEFT JOIN per_cell v USING (case_id, variant_name, sample)
"""

# Per variant: cases (a case passes when all of its samples passed, is errored when any
# sample errored, and is not judged when a sample could not be judged), then per-cell
# averages, then the samples themselves (reported separately when run.samples_per_case > 1):
# columns 10-13; column 14: the cases not judged.
VARIANTS_SQL = """
WITH per_case AS (
    SELECT variant_name, case_id, bool_and(coalesce(passed, false)) AS passed,
           bool_or(error_type IS NOT NULL) AS errored, bool_or(not_judged) AS not_judged, count(*) AS samples
    FROM {cells} GROUP BY variant_name, case_id
), per_variant AS (
    SELECT variant_name, count(*) AS cases, count(*) FILTER (WHERE passed AND NOT not_judged) AS cases_passed,
           count(*) FILTER (WHERE errored) AS cases_errored, max(samples) AS max_samples,
           count(*) FILTER (WHERE not_judged) AS cases_not_judged
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
       any_value(v.max_samples) AS max_samples,
       any_value(v.cases_not_judged) AS cases_not_judged
FROM {cells} c JOIN per_variant v ON v.variant_name = c.variant_name GROUP BY c.variant_name
"""


# Per (variant, case): samples, passing samples and the pass fraction, of the cases whose
# every sample was judged (a case with a sample not judged has no fraction: left out).
PASS_FRACTIONS_SQL = """
SELECT variant_name, case_id, count(*) AS samples,
       count(*) FILTER (WHERE coalesce(passed, false)) AS passed_samples,
       avg(CASE WHEN coalesce(passed, false) THEN 1.0 ELSE 0.0 END) AS fraction
FROM {cells} GROUP BY variant_name, case_id
HAVING NOT bool_or(not_judged)
"""

# The (variant, case) pairs left out of comparisons: some sample could not be judged.
NOT_JUDGED_CASES_SQL = "SELECT DISTINCT variant_name, case_id FROM {cells} WHERE not_judged"

# Per (evaluator, variant, case): the share of the case's samples that evaluator passed and
# their mean score (cells without a result from it do not count; results without a trace neither).
# Per (evaluator, variant): the pass rate, mean score and errored verdicts of the run.
# Results not judged are left out of the pass rate (0 when none was judged) and counted.
EVALUATOR_FIGURES_SQL = """
SELECT evaluator, variant_name,
       coalesce(avg(CASE WHEN ok THEN 1.0 ELSE 0.0 END) FILTER (WHERE NOT not_judged), 0.0) AS pass_rate,
       avg(score) AS avg_score,
       count(*) FILTER (WHERE errored) AS errored,
       count(*) FILTER (WHERE not_judged) AS not_judged
FROM verdicts GROUP BY evaluator, variant_name ORDER BY evaluator, variant_name
"""

# A case with a result of the evaluator not judged has no fraction of that evaluator.
EVALUATOR_FRACTIONS_SQL = """
SELECT v.evaluator, variant_name, case_id,
       avg(CASE WHEN v.ok THEN 1.0 ELSE 0.0 END) AS fraction,
       avg(v.score) AS score
FROM {verdicts} v JOIN {traces} USING (case_id, variant_name, sample)
GROUP BY ALL
HAVING NOT bool_or(v.not_judged)
"""


def variant_summary(row: tuple[Any, ...]) -> VariantSummary:
    """A VariantSummary from a VARIANTS_SQL row (samples reported only when a case has several)."""
    name, cases, passed, errored, latency, cost, tokens_in, tokens_out = row[:8]
    samples = {}
    if len(row) > 13 and (row[13] or 0) > 1:
        samples = {"samples_total": row[10], "samples_passed": row[11], "samples_errored": row[12]}
    not_judged = (row[14] or 0) if len(row) > 14 else 0
    judged = cases - not_judged  # the pass rate is over the cases that have a verdict
    ci = wilson_interval(passed, judged)
    return VariantSummary(
        name=name,
        cases_total=cases,
        pass_rate_ci=list(ci) if ci is not None else None,
        cases_passed=passed,
        cases_errored=errored,
        cases_not_judged=not_judged,
        pass_rate=passed / judged if judged else 0.0,
        avg_latency_ms=latency or 0.0,
        avg_cost_usd=cost,
        avg_tokens_input=tokens_in,
        avg_tokens_output=tokens_out,
        **samples,
    )


class PassRule(Protocol):
    """What the cell verdict needs of ``pass_criteria`` (config.schema.PassCriteria fits)."""

    @property
    def all_required(self) -> list[str]: ...

    @property
    def any_required(self) -> list[str]: ...


@dataclass(frozen=True)
class SnapshotPassCriteria:
    """A run's ``pass_criteria`` as read back from its config.yaml snapshot, and the names of
    its cases' own evaluators (from its cases snapshot: each required for its cases)."""

    all_required: list[str] = field(default_factory=list)
    any_required: list[str] = field(default_factory=list)
    case_evaluators: list[str] = field(default_factory=list)


def with_case_evaluators(pass_criteria: PassRule, run_dir: RunDirectory) -> SnapshotPassCriteria:
    """``pass_criteria`` with the names of the run's case evaluators (its cases snapshot)."""
    return SnapshotPassCriteria(list(pass_criteria.all_required), list(pass_criteria.any_required),
                                case_evaluator_names(run_dir.cases))


def create_cells(
    con: duckdb.DuckDBPyConnection,
    pass_criteria: PassRule,
    *,
    cells: str = "cells",
    traces: str = "cell_traces",
    verdicts: str = "verdicts",
) -> None:
    """Create the ``cells`` table (one row per trace, with its ``passed`` verdict)."""
    con.execute(
        CELLS_SQL.format(cells=cells, traces=traces, verdicts=verdicts),
        {"all_required": list(pass_criteria.all_required), "any_required": list(pass_criteria.any_required),
         "case_evaluators": list(getattr(pass_criteria, "case_evaluators", ()))},
    )


def load_jsonl(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, *, suffix: str = "") -> None:
    """Create ``cell_traces{suffix}`` and ``verdicts{suffix}`` from the run's JSONL files."""
    load_table(con, f"trace_rows{suffix}", run_dir.traces, TRACE_COLUMNS, str(run_dir.traces))
    con.execute(f"CREATE TEMP TABLE cell_traces{suffix} AS {CELL_TRACES_SQL.format(raw=f'trace_rows{suffix}')}")
    con.execute(f"DROP TABLE trace_rows{suffix}")
    load_table(con, f"result_rows{suffix}", run_dir.results, RESULT_COLUMNS, str(run_dir.results))
    con.execute(f"CREATE TEMP TABLE verdicts{suffix} AS {VERDICTS_SQL.format(raw=f'result_rows{suffix}')}")
    con.execute(f"DROP TABLE result_rows{suffix}")


def load_cells(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, pass_criteria: PassRule, *,
               suffix: str = "", cached: bool = False) -> None:
    """Create ``cell_traces{suffix}``, ``verdicts{suffix}`` and ``cells{suffix}`` for a run
    under ``pass_criteria``.

    With ``cached``, from the run's cell store when it matches the run's files (a reader
    never writes it: the summary does); otherwise (and always without ``cached``) from the
    JSONL.
    """
    from evalh_pipeline.queries.cell_store import load_store

    if not (cached and load_store(con, run_dir, suffix=suffix)):
        load_jsonl(con, run_dir, suffix=suffix)
    create_cells(con, pass_criteria, cells=f"cells{suffix}", traces=f"cell_traces{suffix}",
                 verdicts=f"verdicts{suffix}")


def run_section(run_dir: RunDirectory) -> dict[str, Any]:
    """The ``run:`` section of a run's config.yaml snapshot ({} when absent)."""
    from evalh_pipeline.common.yaml_files import load_yaml_text

    if not run_dir.config_yaml.exists():
        return {}
    raw = load_yaml_text(run_dir.config_yaml.read_text(encoding="utf-8")) or {}
    run = raw.get("run") if isinstance(raw, dict) else None
    return run if isinstance(run, dict) else {}


def run_pass_criteria(run_dir: RunDirectory) -> SnapshotPassCriteria:
    """The pass_criteria a run was made with, from its config.yaml snapshot (default when absent).

    The snapshot was validated when the run was made; only its shape is checked here.
    """
    from evalh_pipeline.common.yaml_files import load_yaml_text

    if not run_dir.config_yaml.exists():
        return SnapshotPassCriteria(case_evaluators=case_evaluator_names(run_dir.cases))
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
    return SnapshotPassCriteria(**lists, case_evaluators=case_evaluator_names(run_dir.cases))
