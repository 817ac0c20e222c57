"""The start of each cell's final answer, for the viewer's matrices (a run's, an eval's history).

DuckDB streams traces.jsonl and keeps only the asked-for cases' answers, each cut to its first
characters: a whole answer never leaves DuckDB, however long it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalh_pipeline.queries.sql import MAX_RECORD_BYTES
from evalh_pipeline.store.run_dir import RunDirectory

# Characters of an answer a matrix carries per cell (the case page shows it whole).
ANSWER_PREVIEW_CHARS = 2000

# The lowest sample's answer per cell; a torn or odd line matches nothing.
ANSWERS_SQL = """
SELECT case_id, variant_name, left(answer, {chars}), length(answer) FROM (
    SELECT case_id, variant_name, arg_min(output.final_answer, coalesce(sample, 0)) AS answer
    FROM read_json('{path}', format='newline_delimited', ignore_errors=true, maximum_object_size={max_bytes},
                   columns={{'case_id': 'VARCHAR', 'variant_name': 'VARCHAR', 'sample': 'BIGINT',
                             'output': 'STRUCT(final_answer VARCHAR)'}})
    WHERE list_contains($cases, case_id) AND output.final_answer IS NOT NULL
    GROUP BY case_id, variant_name)
"""


@dataclass(frozen=True)
class CellAnswer:
    """The start of a cell's final answer (its first sample) and the answer's whole length in characters."""

    text: str
    length: int


def cell_answers(con: Any, run_dir: RunDirectory, cases: list[str], *,
                 chars: int = ANSWER_PREVIEW_CHARS) -> dict[tuple[str, str], CellAnswer]:
    """(case, variant) -> the first ``chars`` characters of its answer, for ``cases`` of the run."""
    path = run_dir.traces
    if not cases or not path.exists() or not path.stat().st_size:
        return {}
    sql = ANSWERS_SQL.format(chars=int(chars), path=str(path).replace("'", "''"), max_bytes=MAX_RECORD_BYTES)
    return {(c, v): CellAnswer(text, length) for c, v, text, length in con.execute(sql, {"cases": cases}).fetchall()
            if text is not None}
