"""An eval's history across its runs, for the viewer's ``/evals/<eval>`` page (`evalh view`).

Each run's cells (the shared verdict, each run judged by its own pass_criteria) are reduced
to per (variant, case) pass fractions in one in-memory DuckDB; from there: each run's pass
rate per variant, and one page of cases with their verdicts (and the start of each answer)
across the runs. A case is
unstable when some variant's verdict on it differs between runs (or is split between
samples inside one run); those come first, so a flaky case stands out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from evalh_pipeline.queries.cell_store import answer_again, drop_rows
from evalh_pipeline.queries.cells import PASS_FRACTIONS_SQL, load_cells, run_pass_criteria
from evalh_pipeline.queries.sql import connect, one_row
from evalh_pipeline.queries.view_answers import CellAnswer, cell_answers
from evalh_pipeline.store.run_dir import RunDirectory

RATES_SQL = """
SELECT run, variant_name, count(*) AS cases, count(*) FILTER (WHERE fraction = 1) AS passed
FROM history GROUP BY ALL
"""

# Per case: whether any variant's verdict moved between runs, or split inside a run.
UNSTABLE_SQL = """
CREATE TEMP TABLE case_stability AS
SELECT case_id,
       bool_or(moved) AS unstable
FROM (SELECT case_id, variant_name,
             count(DISTINCT fraction) > 1 OR bool_or(fraction > 0 AND fraction < 1) AS moved
      FROM history GROUP BY ALL)
GROUP BY case_id
"""


@dataclass
class HistoryPage:
    """Pass rates per (run, variant) and one page of cases' verdicts across the runs."""

    rates: dict[tuple[int, str], tuple[int, int]] = field(default_factory=dict)  # (run index, variant) -> (cases, passed)
    total_cases: int = 0
    unstable_cases: int = 0
    cases: list[tuple[str, bool]] = field(default_factory=list)  # (case id, unstable)
    fractions: dict[tuple[str, int, str], float] = field(default_factory=dict)  # (case, run index, variant) -> fraction
    answers: dict[tuple[str, int, str], CellAnswer] = field(default_factory=dict)  # the same keys -> answer's start


def eval_history(runs: Sequence[RunDirectory], *, offset: int, limit: int, unstable_only: bool = False) -> HistoryPage:
    """``runs`` (newest first) side by side; a run that cannot be read is left out by the caller."""
    return answer_again(lambda: _eval_history(runs, offset=offset, limit=limit, unstable_only=unstable_only))


def _eval_history(runs: Sequence[RunDirectory], *, offset: int, limit: int, unstable_only: bool) -> HistoryPage:
    con = connect()
    try:
        con.execute("CREATE TEMP TABLE history (run INTEGER, variant_name VARCHAR, case_id VARCHAR, fraction DOUBLE)")
        for index, run in enumerate(runs):
            suffix = f"_{index}"
            load_cells(con, run, run_pass_criteria(run), suffix=suffix, cached=True)
            con.execute(f"INSERT INTO history SELECT {index}, variant_name, case_id, fraction "
                        f"FROM ({PASS_FRACTIONS_SQL.format(cells='cells' + suffix)})")
            con.execute(f"DROP TABLE cells{suffix}")
            drop_rows(con, suffix=suffix)
        page = HistoryPage()
        for run, variant, cases, passed in con.execute(RATES_SQL).fetchall():
            page.rates[(run, variant)] = (cases, passed)
        con.execute(UNSTABLE_SQL)
        page.total_cases, page.unstable_cases = one_row(con.execute(
            "SELECT count(*), count(*) FILTER (WHERE unstable) FROM case_stability"))
        where = "WHERE unstable" if unstable_only else ""
        page.cases = [(c, bool(u)) for c, u in con.execute(
            f"SELECT case_id, unstable FROM case_stability {where} ORDER BY unstable DESC, case_id "
            f"LIMIT {int(limit)} OFFSET {int(offset)}").fetchall()]
        ids = [c for c, _ in page.cases]
        for case_id, run, variant, fraction in con.execute(
                "SELECT case_id, run, variant_name, fraction FROM history WHERE list_contains($ids, case_id)",
                {"ids": ids}).fetchall():
            page.fractions[(case_id, run, variant)] = fraction
        for index, run_dir in enumerate(runs):
            for (case_id, variant), answer in cell_answers(con, run_dir, ids).items():
                page.answers[(case_id, index, variant)] = answer
        return page
    finally:
        con.close()
