"""What the viewer shows of one run, as DuckDB SQL over its cells (`evalh view`).

A :class:`RunCells` holds one in-memory DuckDB connection with the run's ``cell_traces``
and ``verdicts`` (views of the run's cell store when it matches the files, else tables read
from the JSONL), for the length of one page; the shared cell verdict of :mod:`queries.cells`
(``cells``, ``per_case``) is computed over the whole run only when the page needs it (a
filter, the figures), else over the page's cases alone. It answers the run page: the variants and evaluators tables, a comparison of
two variants with the same paired statistics as the summary, and one page of the case ×
variant matrix under the page's filters. Only the page asked for leaves DuckDB, so a run
of a million results costs the same to page as a small one.

Nothing here writes: the viewer never refreshes the cell store (that is the summary's job,
under the run's lock).
"""

from __future__ import annotations

from collections.abc import Callable

from dataclasses import dataclass, field
from typing import Any

# Imported with this module, not on a page's first use: the viewer imports it when it starts.
from evalh_pipeline.queries.cell_store import load_store
from evalh_pipeline.models import PairedStats, VariantSummary
from evalh_pipeline.queries.cells import (
    EVALUATOR_FIGURES_SQL,
    PASS_FRACTIONS_SQL,
    VARIANTS_SQL,
    create_cells,
    load_jsonl,
    run_pass_criteria,
    variant_summary,
)
from evalh_pipeline.queries.significance import (
    DIFFERENCE,
    adjust_table,
    clustered_sql,
    paired_by_group,
    score_sql,
    scores_by_group,
)
from evalh_pipeline.queries.sql import MAX_RECORD_BYTES, connect, one_row
from evalh_pipeline.queries.view_answers import CellAnswer, cell_answers
from evalh_pipeline.store.run_dir import RunDirectory

# Variant $b against variant $a on the cases both have (queries/significance.py; unclustered).
PAIRED_SQL = clustered_sql(f"""
SELECT 'all' AS everything, a.case_id, {DIFFERENCE.format(after="b", before="a")} AS d
FROM per_case a JOIN per_case b ON b.case_id = a.case_id AND b.variant_name = $b
WHERE a.variant_name = $a
""", "everything", clusters=None)

# Per evaluator, the same (the summary's by_evaluator: results with a trace only), on the
# pass fraction or (``score``) the mean score.
def _evaluator_pairs(column: str, wrap: Callable[..., str] = clustered_sql) -> str:
    return wrap(f"""
WITH f AS NOT MATERIALIZED (
    SELECT v.evaluator, variant_name, case_id, avg(CASE WHEN v.ok THEN 1.0 ELSE 0.0 END) AS fraction,
           avg(v.score) AS score
    FROM verdicts v JOIN cell_traces USING (case_id, variant_name, sample)
    WHERE variant_name IN ($a, $b) GROUP BY ALL
    HAVING NOT bool_or(v.not_judged)
)
SELECT a.evaluator, a.case_id, round(b.{column} - a.{column}, 9) AS d
FROM f a JOIN f b ON b.evaluator = a.evaluator AND b.case_id = a.case_id AND b.variant_name = $b
WHERE a.variant_name = $a AND a.{column} IS NOT NULL AND b.{column} IS NOT NULL
""", "evaluator", None)


EVALUATOR_PAIRED_SQL = _evaluator_pairs("fraction")
EVALUATOR_SCORES_SQL = _evaluator_pairs("score", score_sql)

# Cases of $b whose pass fraction went down (regressions) / up against $a, as the summary
# counts them: a case $b lacks counts as 0 there; a case not judged on either is no flip.
FLIPS_SQL = """
WITH cases AS (SELECT DISTINCT case_id FROM cells
               EXCEPT SELECT case_id FROM cells WHERE not_judged AND variant_name IN ($a, $b)),
     a AS (SELECT case_id, fraction FROM per_case WHERE variant_name = $a),
     b AS (SELECT case_id, fraction FROM per_case WHERE variant_name = $b)
SELECT c.case_id,
       CASE WHEN coalesce(a.fraction, 0) > coalesce(b.fraction, 0) THEN 'regressed' ELSE 'improved' END AS flip
FROM cases c LEFT JOIN a USING (case_id) LEFT JOIN b USING (case_id)
WHERE coalesce(a.fraction, 0) > coalesce(b.fraction, 0)
   OR (b.fraction IS NOT NULL AND b.fraction > coalesce(a.fraction, 0))
ORDER BY flip DESC, c.case_id
"""

# One line of a cell of the matrix: its samples, how many passed, how many errored (the
# system, or a judge that could not judge: no verdict either way).
MATRIX_CELLS_SQL = """
SELECT case_id, variant_name, count(*) AS samples,
       count(*) FILTER (WHERE coalesce(passed, false)) AS passed,
       count(*) FILTER (WHERE error_type IS NOT NULL OR not_judged) AS errored
FROM {cells} WHERE list_contains($cases, case_id) GROUP BY ALL
"""

# The filters of the matrix, each a condition on ``case_id`` (combined with AND).
FILTERS: dict[str, str] = {
    "failed": "case_id IN (SELECT case_id FROM cells WHERE NOT coalesce(passed, false) AND NOT not_judged)",
    "errored": "case_id IN (SELECT case_id FROM cells WHERE error_type IS NOT NULL OR not_judged)",
    "flaky": "case_id IN (SELECT case_id FROM per_case WHERE passed_samples > 0 AND passed_samples < samples)",
    "regressed": """case_id IN (SELECT p.case_id FROM per_case p LEFT JOIN per_case b
                        ON b.case_id = p.case_id AND b.variant_name = $baseline
                     WHERE p.variant_name <> $baseline AND coalesce(b.fraction, 0) > p.fraction)""",
    "improved": """case_id IN (SELECT p.case_id FROM per_case p LEFT JOIN per_case b
                       ON b.case_id = p.case_id AND b.variant_name = $baseline
                    WHERE p.variant_name <> $baseline AND p.fraction > coalesce(b.fraction, 0))""",
    "evaluator": "case_id IN (SELECT case_id FROM verdicts WHERE evaluator = $evaluator AND NOT ok)",
    "meta_key": "case_id IN (SELECT id FROM case_meta WHERE list_contains(json_keys(metadata), $meta_key))",
    "meta_value": """case_id IN (SELECT id FROM case_meta WHERE
                        json_extract_string(metadata, $meta_pointer) = $meta_value)""",
    "text": """case_id IN (SELECT case_id FROM trace_text
                           WHERE contains(lower(input_text), $text) OR contains(lower(answer), $text))""",
}


@dataclass(frozen=True)
class MatrixFilter:
    """The run page's filters. Empty values filter nothing."""

    failed: bool = False
    errored: bool = False
    regressed: bool = False
    improved: bool = False
    flaky: bool = False
    evaluator: str = ""
    meta_key: str = ""
    meta_value: str = ""
    text: str = ""


@dataclass(frozen=True)
class MatrixCell:
    """One (case, variant) of the matrix: ``status`` is pass, fail, error, partial or missing."""

    samples: int
    passed: int
    errored: int
    flip: str = ""  # regressed / improved against the baseline variant

    @property
    def status(self) -> str:
        if self.samples == 0:
            return "missing"
        if self.errored:
            return "error"
        if self.passed == self.samples:
            return "pass"
        return "partial" if self.passed else "fail"


@dataclass
class MatrixPage:
    """One page of the case × variant matrix."""

    total: int
    offset: int
    limit: int
    cases: list[str] = field(default_factory=list)
    cells: dict[tuple[str, str], MatrixCell] = field(default_factory=dict)
    answers: dict[tuple[str, str], CellAnswer] = field(default_factory=dict)


@dataclass(frozen=True)
class EvaluatorFigures:
    """One evaluator's figures on one variant (the fields of models.EvaluatorVariantRollup)."""

    pass_rate: float
    avg_score: float | None
    errored: int


@dataclass(frozen=True)
class VariantPair:
    """Variant ``b`` against variant ``a`` of the same run, as the summary compares with its baseline."""

    a: str
    b: str
    overall: PairedStats | None
    by_evaluator: dict[str, PairedStats]
    regressions: list[str]
    improvements: list[str]


@dataclass(frozen=True)
class CaseNeighbours:
    """A case's previous and next case in the matrix's order (by case id), and the next failed case."""

    previous: str | None
    next: str | None
    next_failed: str | None


def json_pointer(key: str) -> str:
    """The JSON pointer (RFC 6901) of one top-level key: any key, never a path expression."""
    return "/" + key.replace("~", "~0").replace("/", "~1")


class RunCells:
    """One run's cells in an in-memory DuckDB, for the length of one page (a context manager)."""

    def __init__(self, run_dir: RunDirectory) -> None:
        self.run_dir = run_dir
        self.con = connect()
        self._loaded: set[str] = set()
        try:
            self.criteria = run_pass_criteria(run_dir)
            load_rows(self.con, run_dir, cached=True)
        except BaseException:
            self.con.close()
            raise

    def __enter__(self) -> RunCells:
        return self

    def __exit__(self, *exc: object) -> None:
        self.con.close()

    def _cells(self) -> None:
        """``cells`` and ``per_case`` over the whole run (made once, when a page needs them)."""
        if "cells" in self._loaded:
            return
        self._loaded.add("cells")
        create_cells(self.con, self.criteria)
        self.con.execute(f"CREATE TEMP TABLE per_case AS {PASS_FRACTIONS_SQL.format(cells='cells')}")

    def variants(self, order: list[str]) -> list[VariantSummary]:
        """Per-variant figures (cases, passed, errored, averages), declared order first."""
        self._cells()
        rows = {r[0]: variant_summary(r) for r in self.con.execute(VARIANTS_SQL.format(cells="cells")).fetchall()}
        return [rows[n] for n in order if n in rows] + [rows[n] for n in sorted(set(rows) - set(order))]

    def evaluators(self) -> dict[str, dict[str, EvaluatorFigures]]:
        """Evaluator -> variant -> its figures."""
        self._cells()
        found: dict[str, dict[str, EvaluatorFigures]] = {}
        for name, variant, rate, score, errored, _ in self.con.execute(EVALUATOR_FIGURES_SQL).fetchall():
            found.setdefault(name, {})[variant] = EvaluatorFigures(rate, score, errored)
        return found

    def compare_variants(self, a: str, b: str, *, flips_limit: int = 500) -> VariantPair:
        """Variant ``b`` against ``a``: paired statistics overall and per evaluator, and the flips."""
        self._cells()
        params = {"a": a, "b": b}
        overall = paired_by_group(self.con.execute(PAIRED_SQL, params).fetchall())
        scores = scores_by_group(self.con.execute(EVALUATOR_SCORES_SQL, params).fetchall())
        by_evaluator = {name: stats.model_copy(update=scores.get(name, {})) for name, stats
                        in paired_by_group(self.con.execute(EVALUATOR_PAIRED_SQL, params).fetchall()).items()}
        # Benjamini-Hochberg over this pair's evaluators (the summary's family is every variant's).
        by_evaluator = adjust_table({b: by_evaluator})[b]
        rows = self.con.execute(FLIPS_SQL + f" LIMIT {int(flips_limit)}", params).fetchall()
        return VariantPair(
            a=a, b=b, overall=overall.get("all"), by_evaluator=dict(sorted(by_evaluator.items())),
            regressions=[c for c, flip in rows if flip == "regressed"],
            improvements=[c for c, flip in rows if flip == "improved"],
        )

    def matrix(self, filters: MatrixFilter, *, baseline: str | None, offset: int, limit: int) -> MatrixPage:
        """One page of cases (by case id) matching ``filters``, with every variant's cell.

        Without a filter, only the page's cases get their cell verdicts (the run's first page
        never aggregates the whole run); a filter needs them all.
        """
        conditions, params = self._conditions(filters, baseline)
        if conditions:
            self._cells()
            source = f"(SELECT DISTINCT case_id FROM cells) WHERE {' AND '.join(conditions)}"
        else:
            source = "(SELECT DISTINCT case_id FROM cell_traces)"
        (total,) = one_row(self.con.execute(f"SELECT count(*) FROM {source}", params))
        cases = [c for (c,) in self.con.execute(
            f"SELECT case_id FROM {source} ORDER BY case_id LIMIT {int(limit)} OFFSET {int(offset)}", params).fetchall()]
        page = MatrixPage(total=total, offset=offset, limit=limit, cases=cases)
        cells, per_case = self._page_cells(cases)
        flips = self._flips(per_case, cases, baseline)
        for case_id, variant, samples, passed, errored in self.con.execute(
                MATRIX_CELLS_SQL.format(cells=cells), {"cases": cases}).fetchall():
            page.cells[(case_id, variant)] = MatrixCell(samples, passed, errored, flips.get((case_id, variant), ""))
        page.answers = cell_answers(self.con, self.run_dir, cases)
        return page

    def neighbours(self, case_id: str) -> CaseNeighbours:
        """The cases before and after ``case_id`` in the matrix's order, and the next failed one."""
        self._cells()
        row = one_row(self.con.execute(
            """SELECT (SELECT max(case_id) FROM cells WHERE case_id < $id),
                      (SELECT min(case_id) FROM cells WHERE case_id > $id),
                      (SELECT min(case_id) FROM cells WHERE case_id > $id AND NOT coalesce(passed, false)),
                      (SELECT min(case_id) FROM cells WHERE NOT coalesce(passed, false))""",
            {"id": case_id}))
        previous, following, next_failed, first_failed = row
        # After the last failure, the next one is the first again (as a search wraps around).
        return CaseNeighbours(previous, following, next_failed or (first_failed if first_failed != case_id else None))

    def _page_cells(self, cases: list[str]) -> tuple[str, str]:
        """The names of tables with the cells and pass fractions of ``cases`` (the run's own when made)."""
        if "cells" in self._loaded:
            return "cells", "per_case"
        for table, source in (("page_traces", "cell_traces"), ("page_verdicts", "verdicts")):
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS "
                             f"SELECT * FROM {source} WHERE list_contains($cases, case_id)", {"cases": cases})
        self.con.execute("DROP TABLE IF EXISTS page_cells")
        create_cells(self.con, self.criteria, cells="page_cells", traces="page_traces", verdicts="page_verdicts")
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE page_per_case AS {PASS_FRACTIONS_SQL.format(cells='page_cells')}")
        return "page_cells", "page_per_case"

    def _flips(self, per_case: str, cases: list[str], baseline: str | None) -> dict[tuple[str, str], str]:
        if baseline is None or not cases:
            return {}
        rows = self.con.execute(
            f"""SELECT p.case_id, p.variant_name,
                      CASE WHEN coalesce(b.fraction, 0) > p.fraction THEN 'regressed' ELSE 'improved' END
               FROM {per_case} p LEFT JOIN {per_case} b ON b.case_id = p.case_id AND b.variant_name = $baseline
               WHERE list_contains($cases, p.case_id) AND p.variant_name <> $baseline
                 AND coalesce(b.fraction, 0) <> p.fraction""",
            {"baseline": baseline, "cases": cases}).fetchall()
        return {(c, v): flip for c, v, flip in rows}

    def _conditions(self, filters: MatrixFilter, baseline: str | None) -> tuple[list[str], dict[str, Any]]:
        conditions: list[str] = []
        params: dict[str, Any] = {}
        for flag in ("failed", "errored", "flaky"):
            if getattr(filters, flag):
                conditions.append(FILTERS[flag])
        for flag in ("regressed", "improved"):
            if getattr(filters, flag):
                conditions.append(FILTERS[flag] if baseline is not None else "false")
                params["baseline"] = baseline
        if filters.evaluator:
            conditions.append(FILTERS["evaluator"])
            params["evaluator"] = filters.evaluator
        if filters.meta_key:
            self._load_case_meta()
            if filters.meta_value:
                conditions.append(FILTERS["meta_value"])
                params.update(meta_pointer=json_pointer(filters.meta_key), meta_value=filters.meta_value)
            else:
                conditions.append(FILTERS["meta_key"])
                params["meta_key"] = filters.meta_key
        if filters.text:
            self._load_trace_text()
            conditions.append(FILTERS["text"])
            params["text"] = filters.text.lower()
        return conditions, params

    def _load_case_meta(self) -> None:
        """``case_meta(id, metadata)`` from cases.jsonl (an eval-harness run has none: empty)."""
        if "case_meta" in self._loaded:
            return
        self._loaded.add("case_meta")
        path = self.run_dir.cases
        if path.exists() and path.stat().st_size:
            self.con.execute(f"""CREATE TEMP TABLE case_meta AS
                SELECT id, metadata FROM {_records(path, "{'id': 'VARCHAR', 'metadata': 'JSON'}")}
                WHERE json_type(metadata) = 'OBJECT'""")
        else:
            self.con.execute("CREATE TEMP TABLE case_meta (id VARCHAR, metadata JSON)")

    def _load_trace_text(self) -> None:
        """``trace_text(case_id, input_text, answer)``: what the text filter searches."""
        if "trace_text" in self._loaded:
            return
        self._loaded.add("trace_text")
        path = self.run_dir.traces
        if path.exists() and path.stat().st_size:
            columns = "{'case_id': 'VARCHAR', 'input': 'JSON', 'output': 'STRUCT(final_answer VARCHAR)'}"
            self.con.execute(f"""CREATE TEMP TABLE trace_text AS
                SELECT case_id, coalesce(CAST(input AS VARCHAR), '') AS input_text,
                       coalesce(output.final_answer, '') AS answer
                FROM {_records(path, columns)}""")
        else:
            self.con.execute("CREATE TEMP TABLE trace_text (case_id VARCHAR, input_text VARCHAR, answer VARCHAR)")


def load_rows(con: Any, run_dir: RunDirectory, *, cached: bool) -> None:
    """``cell_traces`` and ``verdicts`` of the run: from its cell store when it matches the
    files (``cached``; read, never written), else from the JSONL (as :func:`queries.cells.load_cells`)."""
    if not (cached and load_store(con, run_dir)):
        load_jsonl(con, run_dir)


def _records(path: Any, columns: str) -> str:
    """A lenient ``read_json`` of a JSONL file for filtering: a torn or odd line matches nothing."""
    literal = str(path).replace("'", "''")
    return (f"read_json('{literal}', format='newline_delimited', columns={columns}, ignore_errors=true, "
            f"maximum_object_size={MAX_RECORD_BYTES})")
