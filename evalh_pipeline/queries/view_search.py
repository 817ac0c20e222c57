"""Search across runs for the viewer: the cells whose input or final answer contains a text.

DuckDB streams each run's traces.jsonl (newest run first) and hands back only the matching
cells, each with a short excerpt around the match: no trace is ever loaded whole. A run
whose traces cannot be read is named, not searched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from evalh_pipeline.queries.sql import MAX_RECORD_BYTES, connect
from evalh_pipeline.queries.sql import duckdb  # the engine module sql.py picked
from evalh_pipeline.store.run_dir import RunDirectory

EXCERPT_BEFORE, EXCERPT_CHARS = 60, 200

# A trace's searched text: its final answer, else its input (as JSON text).
SEARCH_SQL = """
SELECT case_id, variant_name, sample, field,
       substring(text, greatest(1, strpos(lower(text), $text) - {before}), {chars}) AS excerpt
FROM (
    SELECT case_id, variant_name, coalesce(sample, 0) AS sample,
           CASE WHEN contains(lower(answer), $text) THEN 'answer' ELSE 'input' END AS field,
           CASE WHEN contains(lower(answer), $text) THEN answer ELSE input_text END AS text
    FROM (SELECT case_id, variant_name, sample, coalesce(output.final_answer, '') AS answer,
                 coalesce(CAST(input AS VARCHAR), '') AS input_text
          FROM read_json('{path}', format='newline_delimited', ignore_errors=true,
                         maximum_object_size={max_bytes},
                         columns={{'case_id': 'VARCHAR', 'variant_name': 'VARCHAR', 'sample': 'BIGINT',
                                   'input': 'JSON', 'output': 'STRUCT(final_answer VARCHAR)'}}))
    WHERE contains(lower(answer), $text) OR contains(lower(input_text), $text))
ORDER BY case_id, variant_name, sample
LIMIT {limit}
"""


@dataclass(frozen=True)
class SearchHit:
    """One cell whose answer (or input) contains the text: where, and an excerpt around the match."""

    run_id: str
    case_id: str
    variant: str
    sample: int
    field: str  # "answer" or "input"
    excerpt: str


@dataclass
class SearchResult:
    """The hits (newest run first, at most ``limit``), the runs searched and the runs that could not be."""

    hits: list[SearchHit] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)  # run id -> why
    more: bool = False  # the limit was reached: more cells may match


def search_runs(runs: Sequence[RunDirectory], text: str, *, limit: int) -> SearchResult:
    """The cells of ``runs`` (newest first) whose final answer or input contains ``text`` (any case)."""
    result = SearchResult()
    needle = text.lower()
    if not needle:
        return result
    con = connect()
    try:
        for run in runs:
            remaining = limit + 1 - len(result.hits)
            if remaining <= 0:
                break
            result.searched.append(run.run_id)
            path = run.traces
            if not path.exists() or not path.stat().st_size:
                continue
            sql = SEARCH_SQL.format(path=str(path).replace("'", "''"), before=EXCERPT_BEFORE, chars=EXCERPT_CHARS,
                                    max_bytes=MAX_RECORD_BYTES, limit=remaining)
            try:
                rows = con.execute(sql, {"text": needle}).fetchall()
            except duckdb.Error as exc:
                result.unreadable[run.run_id] = str(exc).splitlines()[0]
                continue
            result.hits += [SearchHit(run.run_id, *row) for row in rows]
    finally:
        con.close()
    result.more = len(result.hits) > limit
    del result.hits[limit:]
    return result
