"""A run in which no system answered: every trace errored with no output.

Such a run holds nothing to judge (a typo in a target, a service that is down, a program
that is not installed); its pass rate of 0 says nothing about the system. The traces
stage fails on it with this cause first (defs/evals/assets.py), and the viewer shows
it as failed. Read from traces.jsonl with DuckDB, so an old run gets the same verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalh_pipeline.queries.sql import connect, jsonl_table, one_row

_COLUMNS = {
    "error": "STRUCT(type VARCHAR, message VARCHAR)",
    "output": "STRUCT(final_answer VARCHAR, structured JSON)",
}
# Longest message quoted in the one-line cause (the trace keeps all of it).
_MESSAGE_CHARS = 400


@dataclass(frozen=True)
class Unanswered:
    """Every one of ``cells`` traces errored before its system answered; ``count`` of them
    with the most common error, ``error_type: message``."""

    cells: int
    error_type: str
    message: str
    count: int

    def cause(self) -> str:
        """One line, the cause first: ``config_error: cannot import module … (12 of 12 cells; …)``."""
        message = " ".join(self.message.split())
        if len(message) > _MESSAGE_CHARS:
            message = message[:_MESSAGE_CHARS] + "…"
        share = "every cell" if self.count == self.cells else f"{self.count} of {self.cells} cells"
        return (f"{self.error_type}: {message} ({share}; no system answered any of the "
                f"{self.cells} cells of this run)")


def unanswered_run(traces: Path) -> Unanswered | None:
    """The run's verdict when every trace errored with no answer (no final_answer, no
    structured output), else None (an empty run too)."""
    table = jsonl_table(traces, _COLUMNS)
    con = connect()
    try:
        unanswered = "error IS NOT NULL AND output.final_answer IS NULL AND output.structured IS NULL"
        cells, silent = one_row(con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE {unanswered}) FROM {table}"))
        if not cells or silent != cells:
            return None
        error_type, message, count = one_row(con.execute(
            f"SELECT coalesce(error.type, '?'), coalesce(error.message, ''), count(*) AS n FROM {table} "
            "GROUP BY ALL ORDER BY n DESC, 1, 2 LIMIT 1"))
    finally:
        con.close()
    return Unanswered(cells=cells, error_type=error_type, message=message, count=count)
