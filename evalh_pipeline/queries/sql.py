"""Shared pieces of the DuckDB queries: how a run's JSONL files are read as tables.

Each query opens its own in-memory DuckDB connection, so parallel Dagster steps never
contend for a database file. Columns are declared, not inferred: opaque fields such as
``input`` or ``detail`` are never parsed, and a torn final line is ignored.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

TRACE_COLUMNS = {
    "schema_version": "VARCHAR",
    "case_id": "VARCHAR",
    "variant_name": "VARCHAR",
    "sample": "BIGINT",
    "started_at": "VARCHAR",
    "finished_at": "VARCHAR",
    "latency_ms": "DOUBLE",
    "metrics": "STRUCT(token_input BIGINT, token_output BIGINT, token_thinking BIGINT, cost_usd DOUBLE)",
    "error": "STRUCT(type VARCHAR, message VARCHAR)",
}

RESULT_COLUMNS = {
    "schema_version": "VARCHAR",
    "case_id": "VARCHAR",
    "variant_name": "VARCHAR",
    "sample": "BIGINT",
    "evaluator": "VARCHAR",
    "evaluator_type": "VARCHAR",
    "passed": "BOOLEAN",
    "score": "DOUBLE",
    "reason": "VARCHAR",
    "error": "STRUCT(type VARCHAR, message VARCHAR)",
}


def connect(threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB for one query."""
    con = duckdb.connect(":memory:")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return con


def jsonl_table(path: Path, columns: dict[str, str]) -> str:
    """A ``read_json`` table expression for one JSONL file (an empty table when missing)."""
    cols = ", ".join(f"'{name}': '{kind}'" for name, kind in columns.items())
    if not path.exists() or path.stat().st_size == 0:
        nulls = ", ".join(f"NULL::{kind} AS {name}" for name, kind in columns.items())
        return f"(SELECT {nulls} WHERE false)"
    literal = str(path).replace("'", "''")
    return (
        f"read_json('{literal}', format='newline_delimited', columns={{{cols}}}, "
        f"ignore_errors=true, maximum_object_size=268435456)"
    )


def check_versions(con: duckdb.DuckDBPyConnection, table: str, what: str) -> None:
    """Refuse a file holding records of a schema major other than 1."""
    from evalh_pipeline.models.versioning import check_major

    for (version,) in con.execute(f"SELECT DISTINCT coalesce(schema_version, '1.0') FROM {table}").fetchall():
        check_major(version, what=what)
