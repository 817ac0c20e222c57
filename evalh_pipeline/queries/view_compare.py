"""The cases two runs judged alike, for the viewer's comparison (queries/compare.py has the flips).

A case is unchanged on a variant when both runs have it and its pass fraction is the same
(both passed, both failed, or the same share of samples). Only one page of them leaves DuckDB.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalh_pipeline.queries.cell_store import answer_again
from evalh_pipeline.queries.cells import PASS_FRACTIONS_SQL, load_cells, run_pass_criteria
from evalh_pipeline.queries.sql import connect
from evalh_pipeline.store.run_dir import RunDirectory

UNCHANGED_SQL = """
SELECT variant_name, case_id, a.fraction
FROM ({a}) a JOIN ({b}) b USING (variant_name, case_id)
WHERE a.fraction = b.fraction
ORDER BY variant_name, case_id
"""


@dataclass
class UnchangedCases:
    """Per variant, the unchanged cases (id, pass fraction), at most ``limit`` each, and how many there are."""

    cases: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def unchanged_cases(run_a: RunDirectory, run_b: RunDirectory, *, limit: int) -> UnchangedCases:
    """The (variant, case) pairs both runs have with the same pass fraction."""
    return answer_again(lambda: _unchanged_cases(run_a, run_b, limit))


def _unchanged_cases(run_a: RunDirectory, run_b: RunDirectory, limit: int) -> UnchangedCases:
    con = connect()
    try:
        for suffix, run in (("_a", run_a), ("_b", run_b)):
            load_cells(con, run, run_pass_criteria(run), suffix=suffix, cached=True)
        sql = UNCHANGED_SQL.format(a=PASS_FRACTIONS_SQL.format(cells="cells_a"),
                                   b=PASS_FRACTIONS_SQL.format(cells="cells_b"))
        found = UnchangedCases()
        for variant, count, cases in con.execute(
                f"SELECT variant_name, count(*), list((case_id, fraction) ORDER BY case_id)[1:{int(limit)}] "
                f"FROM ({sql}) GROUP BY variant_name ORDER BY variant_name").fetchall():
            found.counts[variant] = count
            found.cases[variant] = [(case_id, float(fraction)) for case_id, fraction in cases]
        return found
    finally:
        con.close()
