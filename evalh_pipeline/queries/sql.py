"""Shared pieces of the DuckDB queries: how a run's JSONL files are read as tables.

Each query opens its own in-memory DuckDB connection, so parallel Dagster steps never
contend for a database file. Columns are declared, not inferred: opaque fields such as
``input`` or ``detail`` are never parsed, and a torn final line is ignored.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.errors import UserError

if TYPE_CHECKING:
    import duckdb as duckdb  # the same API as _duckdb; re-exported for the other queries
else:
    try:
        # DuckDB's engine itself: the `duckdb` package re-exports this C++ extension and adds a
        # pure-Python relational API that these queries never use, and that alone costs about
        # 0.1 s to import, a fifth of the budget of `evalh compare` as a whole process.
        import _duckdb as duckdb
    except ImportError:  # a DuckDB release that does not ship the engine as `_duckdb`
        import duckdb


def one_row(cursor: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    """The row of a query that always returns one (an aggregate); DuckDB types it maybe-None."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError("the query returned no row")
    return row

TRACE_COLUMNS = {
    "schema_version": "VARCHAR",
    "case_id": "VARCHAR",
    "variant_name": "VARCHAR",
    "sample": "BIGINT",
    "started_at": "VARCHAR",
    "finished_at": "VARCHAR",
    "latency_ms": "DOUBLE",
    "metrics": "STRUCT(token_input BIGINT, token_output BIGINT, token_thinking BIGINT, cost_usd DOUBLE)",
    "error": "STRUCT(type VARCHAR)",
    "reused_from": "VARCHAR",
}

RESULT_COLUMNS = {
    "schema_version": "VARCHAR",
    "case_id": "VARCHAR",
    "variant_name": "VARCHAR",
    "sample": "BIGINT",
    "evaluator": "VARCHAR",
    "passed": "BOOLEAN",
    "score": "DOUBLE",
    "error": "STRUCT(type VARCHAR)",
}


# The largest single record read; a bigger one is reported, never silently skipped.
MAX_RECORD_BYTES = 16 * 1024 * 1024


class UnreadableRecordsError(UserError, ValueError):
    """Some complete lines of a JSONL file could not be read as records."""


# DuckDB's own memory (its buffer pool: tables, hash tables, sorts) per connection. Past it,
# DuckDB evicts to TEMP_PREFIX-named folders of the system temp dir instead of growing, so a
# summary costs about the same at 10,000 cells as at a million (benchmarks/README.md,
# "Memory"). Every query here must be able to spill: a CTE read twice is NOT MATERIALIZED.
MEMORY_LIMIT = "64MB"
TEMP_PREFIX = "evalh-duckdb-"


def connect() -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB for one query, sized for a worker, not for the machine.

    One thread and no insertion-order guarantee keep the JSON reader's buffers (and so
    the peak memory) independent of the file size. What does not fit in
    :data:`MEMORY_LIMIT` goes to a folder of its own in the system temp dir, which DuckDB
    creates on the first spill and removes when the connection closes (never the current
    directory, DuckDB's default).
    """
    spill = Path(tempfile.gettempdir()) / f"{TEMP_PREFIX}{uuid.uuid4().hex}"
    con = duckdb.connect(":memory:", config={"threads": 1, "preserve_insertion_order": False,
                                             "memory_limit": MEMORY_LIMIT, "temp_directory": str(spill)})
    # No progress bar: DuckDB prints one on stdout for a query past 2 s (a large summary).
    con.execute("SET enable_progress_bar = false")
    return con


def jsonl_table(path: Path, columns: dict[str, str], *, strict: bool = False) -> str:
    """A ``read_json`` table expression for one JSONL file (an empty table when missing).

    ``strict``: a line DuckDB cannot read is an error instead of being skipped.
    """
    cols = ", ".join(f"'{name}': '{kind}'" for name, kind in columns.items())
    if not path.exists() or path.stat().st_size == 0:
        nulls = ", ".join(f"NULL::{kind} AS {name}" for name, kind in columns.items())
        return f"(SELECT {nulls} WHERE false)"
    literal = str(path).replace("'", "''")
    return (
        f"read_json('{literal}', format='newline_delimited', columns={{{cols}}}, "
        f"ignore_errors={'false' if strict else 'true'}, maximum_object_size={MAX_RECORD_BYTES})"
    )


def load_table(con: duckdb.DuckDBPyConnection, name: str, path: Path, columns: dict[str, str], what: str) -> int:
    """Read a JSONL file once into a temp table; check its versions and that no record was lost.

    A file that ends with a newline (the usual case) is read strictly: any line DuckDB
    cannot read fails the query. Only a file with a torn last line (a killed writer) is
    read with ``ignore_errors`` so the torn line is skipped, and then the rows are
    counted against the complete lines, so no other line can go missing silently.
    """
    strict = _ends_with_newline(path)
    query = f"SELECT * FROM {jsonl_table(path, columns, strict=strict)}"
    if not strict:
        # ignore_errors turns an unreadable line into a row of NULLs: drop those, then count.
        query += " WHERE " + " OR ".join(f"{column} IS NOT NULL" for column in columns)
    try:
        con.execute(f"CREATE TEMP TABLE {name} AS {query}")
    except duckdb.InvalidInputException as exc:
        message = str(exc).split("\n", 1)[0].removeprefix("Invalid Input Error: ")
        raise UnreadableRecordsError(
            f"{what}: a record could not be read (malformed JSON, or a record over "
            f"{MAX_RECORD_BYTES // (1024 * 1024)} MB): {message}"
        ) from None
    check_versions(con, name, what)
    rows: int = one_row(con.execute(f"SELECT count(*) FROM {name}"))[0]
    if strict:
        return rows
    expected = count_complete_lines(path)
    if rows != expected:
        raise UnreadableRecordsError(
            f"{what}: {expected - rows} of {expected} records could not be read "
            f"(malformed JSON, or a record over {MAX_RECORD_BYTES // (1024 * 1024)} MB)"
        )
    return rows


def _ends_with_newline(path: Path) -> bool:
    """True for a missing or empty file too (nothing torn to skip)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            if handle.tell() == 0:
                return True
            handle.seek(-1, 2)
            return handle.read(1) == b"\n"
    except FileNotFoundError:
        return True


def count_complete_lines(path: Path) -> int:
    """Non-empty, newline-terminated lines: the records a reader must see."""
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.endswith(b"\n") and line.strip())


def check_versions(con: duckdb.DuckDBPyConnection, table: str, what: str) -> None:
    """Refuse a file holding records of a schema major other than 1."""
    versions = [v for (v,) in con.execute(f"SELECT DISTINCT coalesce(schema_version, '1.0') FROM {table}").fetchall()]
    if all(v.split(".", 1)[0] == "1" for v in versions):
        return  # the common case, without importing the models package (pydantic) for the error
    from evalh_pipeline.models.versioning import check_major

    for version in versions:
        check_major(version, what=what)
