"""``sqlite``: runs in one SQLite file; every row carries the namespace as a JSON column.

    output:
      - type: sqlite
        path: runs.db                 # relative to the eval's folder
        run_namespace: {project: agent_v3, branch: main}

The tables ``traces``, ``results``, ``artifacts`` and ``summaries`` have the shape
eval-harness gives them (a payload column holding the record), so its databases open
here. A database created before namespaces (v0.1) is migrated in place on open: for each
table ``PRAGMA table_info`` tells which columns are missing and ``ALTER TABLE ADD COLUMN``
adds them, NULL-able; the rows are kept and no schema_version changes. Isolation is
opt-in at query time (``--namespace``); rows of a v0.1 file have no namespace and match
only an unfiltered read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalh_pipeline.config.paths import resolve_input_path
from evalh_pipeline.outputs.stores.base import StoreConfig, StoreError
from evalh_pipeline.outputs.stores.sql import Dialect, SqlStore

SQLITE = Dialect(
    tables={"runs": "evalh_runs", "run_files": "evalh_run_files", "baselines": "evalh_baselines",
            "traces": "traces", "results": "results", "artifacts": "artifacts", "summaries": "summaries"},
    json_param="?",
)

# Tables as this version creates them.
SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (
    run_id TEXT NOT NULL, case_id TEXT NOT NULL, variant_name TEXT NOT NULL, sample INTEGER NOT NULL DEFAULT 0,
    started_at TEXT NOT NULL, namespace TEXT, cell_id TEXT, error_type TEXT, digest TEXT, payload TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id, variant_name, sample));
CREATE TABLE IF NOT EXISTS results (
    run_id TEXT NOT NULL, case_id TEXT NOT NULL, variant_name TEXT NOT NULL, sample INTEGER NOT NULL DEFAULT 0,
    evaluator TEXT NOT NULL, started_at TEXT NOT NULL, namespace TEXT, digest TEXT, payload TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id, variant_name, sample, evaluator));
CREATE TABLE IF NOT EXISTS artifacts (
    run_id TEXT NOT NULL, case_id TEXT NOT NULL, variant_name TEXT NOT NULL, sample INTEGER NOT NULL DEFAULT 0,
    namespace TEXT, digest TEXT, path TEXT, payload TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id, variant_name, sample));
CREATE TABLE IF NOT EXISTS summaries (
    run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, namespace TEXT, digest TEXT, payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS evalh_runs (
    run_id TEXT PRIMARY KEY, eval_name TEXT, created_at TEXT, namespace TEXT, meta TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS evalh_run_files (
    run_id TEXT NOT NULL, name TEXT NOT NULL, namespace TEXT, digest TEXT, content TEXT NOT NULL,
    PRIMARY KEY (run_id, name));
CREATE TABLE IF NOT EXISTS evalh_baselines (
    eval_name TEXT NOT NULL, namespace_key TEXT NOT NULL, namespace TEXT, run_id TEXT NOT NULL,
    promoted_at TEXT NOT NULL, PRIMARY KEY (eval_name, namespace_key));
"""

# Columns added since v0.1, per table: what an older file gets on open.
ADDED_COLUMNS = {
    "traces": {"namespace": "TEXT", "sample": "INTEGER NOT NULL DEFAULT 0", "cell_id": "TEXT",
               "error_type": "TEXT", "digest": "TEXT"},
    "results": {"namespace": "TEXT", "sample": "INTEGER NOT NULL DEFAULT 0", "digest": "TEXT"},
    "artifacts": {"namespace": "TEXT", "sample": "INTEGER NOT NULL DEFAULT 0", "digest": "TEXT", "path": "TEXT"},
    "summaries": {"namespace": "TEXT", "digest": "TEXT"},
}
KEYS = {
    "traces": ("run_id", "case_id", "variant_name", "sample"),
    "results": ("run_id", "case_id", "variant_name", "sample", "evaluator"),
    "artifacts": ("run_id", "case_id", "variant_name", "sample"),
}


class SqliteConfig(StoreConfig):
    path: str = "runs.db"


class SqliteStore(SqlStore[SqliteConfig]):
    """A SQLite file; safe for several processes on one machine (WAL, busy timeout)."""

    dialect = SQLITE

    @property
    def path(self) -> Path:
        value = self.config.path
        if value.startswith("sqlite:///"):
            value = value.removeprefix("sqlite:///")
        path = Path(value).expanduser()
        return path if path.is_absolute() else resolve_input_path(value, self.context.eval_dir)

    @property
    def label(self) -> str:
        return f"sqlite:///{self.path}"

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        with self._transaction(conn):
            existing = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table, columns in ADDED_COLUMNS.items():
                if table not in existing:
                    continue
                have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
                for column, kind in columns.items():
                    if column not in have:
                        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            for statement in SCHEMA.split(";"):  # not executescript: it would commit mid-transaction
                if statement.strip():
                    conn.execute(statement)
            for table, key in KEYS.items():
                pk = [row[1] for row in sorted(conn.execute(f"PRAGMA table_info({table})"), key=lambda r: r[5]) if row[5]]
                if tuple(pk) != key:
                    # A v0.1 key without `sample`: the upsert needs a unique index on the full key.
                    conn.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {table}_cell_key ON {table} ({', '.join(key)})")
                    if table == "traces":
                        self._sample_keys = False
            for table in ("evalh_runs", "traces", "results"):
                conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_namespace ON {table} (namespace)")

    @contextmanager
    def _transaction(self, conn: Any) -> Iterator[None]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _namespace_filter(self, namespace: Mapping[str, str] | None, alias: str = "") -> tuple[str, list[Any]]:
        if not namespace:
            return "", []
        clauses, params = [], []
        for key, value in namespace.items():
            # json_each, not a JSON path: any key text (quotes, dots, `$`) matches as it is.
            clauses.append(f" AND EXISTS (SELECT 1 FROM json_each({alias}namespace) AS ns "
                           "WHERE ns.key = ? AND ns.type = 'text' AND ns.value = ?)")
            params += [key, value]
        return "".join(clauses), params
