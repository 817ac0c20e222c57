"""``postgres``: runs in a PostgreSQL database, shared by every machine that points at it.

    output:
      - type: postgres
        dsn: ${EVALH_POSTGRES_DSN}     # postgresql://user:password@host:5432/evals
        schema: public                # optional
        run_namespace: {project: agent_v3}

Needs the ``postgres`` extra (psycopg 3). The namespace is a JSONB column on every table
with a GIN index, so ``--namespace project=agent_v3`` is an indexed containment query
(``namespace @> '{"project": "agent_v3"}'``): one database serves many teams and branches.
Tables are created (and columns added) on first use with ``IF NOT EXISTS``; several
processes may sync at once (each sync is one transaction; keys are primary keys).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic import Field, field_validator

from evalh_pipeline.outputs.stores.base import StoreConfig, StoreError
from evalh_pipeline.outputs.stores.sql import Dialect, SqlStore

TABLES = ("runs", "run_files", "traces", "results", "artifacts", "summaries", "baselines")


def _schema_sql(schema: str) -> list[str]:
    t = {name: f'"{schema}".evalh_{name}' for name in TABLES}
    return [
        f'CREATE SCHEMA IF NOT EXISTS "{schema}"',
        f"""CREATE TABLE IF NOT EXISTS {t['runs']} (
            run_id TEXT PRIMARY KEY, eval_name TEXT, created_at TEXT, namespace JSONB, meta TEXT NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS {t['run_files']} (
            run_id TEXT NOT NULL, name TEXT NOT NULL, namespace JSONB, digest TEXT, content TEXT NOT NULL,
            PRIMARY KEY (run_id, name))""",
        f"""CREATE TABLE IF NOT EXISTS {t['traces']} (
            run_id TEXT NOT NULL, case_id TEXT NOT NULL, variant_name TEXT NOT NULL, sample INTEGER NOT NULL DEFAULT 0,
            started_at TEXT NOT NULL, namespace JSONB, error_type TEXT, digest TEXT, payload JSONB NOT NULL,
            PRIMARY KEY (run_id, case_id, variant_name, sample))""",
        f"""CREATE TABLE IF NOT EXISTS {t['results']} (
            run_id TEXT NOT NULL, case_id TEXT NOT NULL, variant_name TEXT NOT NULL, sample INTEGER NOT NULL DEFAULT 0,
            evaluator TEXT NOT NULL, started_at TEXT NOT NULL, namespace JSONB, digest TEXT, payload JSONB NOT NULL,
            PRIMARY KEY (run_id, case_id, variant_name, sample, evaluator))""",
        f"""CREATE TABLE IF NOT EXISTS {t['artifacts']} (
            run_id TEXT NOT NULL, case_id TEXT NOT NULL, variant_name TEXT NOT NULL, sample INTEGER NOT NULL DEFAULT 0,
            namespace JSONB, digest TEXT, path TEXT, payload JSONB NOT NULL,
            PRIMARY KEY (run_id, case_id, variant_name, sample))""",
        f"""CREATE TABLE IF NOT EXISTS {t['summaries']} (
            run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, namespace JSONB, digest TEXT, payload JSONB NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS {t['baselines']} (
            eval_name TEXT NOT NULL, namespace_key TEXT NOT NULL, namespace JSONB, run_id TEXT NOT NULL,
            promoted_at TEXT NOT NULL, PRIMARY KEY (eval_name, namespace_key))""",
        # A table made before namespaces gets the column in place.
        *(f"ALTER TABLE {t[name]} ADD COLUMN IF NOT EXISTS namespace JSONB" for name in TABLES),
        *(f"CREATE INDEX IF NOT EXISTS evalh_{name}_namespace ON {t[name]} USING GIN (namespace jsonb_path_ops)"
          for name in ("runs", "traces", "results", "baselines")),
    ]


class PostgresConfig(StoreConfig):
    dsn: str = Field(min_length=1)
    schema_: str = Field(default="public", alias="schema", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    connect_timeout_seconds: float = Field(default=10, gt=0)
    # eval-harness's pool size: accepted; each sync here uses one connection.
    pool_size: int = Field(default=5, ge=1)

    @field_validator("dsn")
    @classmethod
    def _postgres_url(cls, value: str) -> str:
        if "://" in value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("dsn must be a postgresql:// URL or a libpq key=value string")
        return value


# A URL's password (``scheme://user:PASSWORD@host``): up to the authority's last ``@``.
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*):[^/?#\s]*@")
# ``password=...`` in a libpq key=value string (quoted values may hold spaces and \' escapes)
# or in a URL's query (``?password=...&``); ``sslpassword`` too.
_KEYWORD_PASSWORD = re.compile(
    r"(?P<head>(?<![\w])\w*password\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|[^\s&#]+)", re.IGNORECASE)


def redact_dsn(dsn: str) -> str:
    """The DSN without its password (URL or key=value form), for labels and errors."""
    dsn = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}:***@", dsn)
    return _KEYWORD_PASSWORD.sub(lambda m: f"{m.group('head')}***", dsn)


def dsn_passwords(dsn: str) -> frozenset[str]:
    """The password(s) a DSN holds, and each word of them: a driver's error about a malformed
    string may quote a piece of it (``missing "=" after "…"``)."""
    found: set[str] = set()
    for match in _URL_PASSWORD.finditer(dsn):
        found.add(match.group(0)[len(match.group("head")) + 1:-1])
    for match in _KEYWORD_PASSWORD.finditer(dsn):
        value = match.group(0)[len(match.group("head")):]
        found.add(value.strip("'"))
    words = {word.strip("'") for value in found for word in value.split()}
    return frozenset(v for v in found | words if len(v) >= 3)


class PostgresStore(SqlStore[PostgresConfig]):
    """A PostgreSQL database (psycopg 3)."""

    def __init__(self, config: Mapping[str, Any], context: Any) -> None:
        super().__init__(config, context)
        schema = self.config.schema_
        self.dialect = Dialect(
            tables={name: f'"{schema}".evalh_{name}' for name in TABLES},
            json_param="?::jsonb",
        )

    @property
    def label(self) -> str:
        return redact_dsn(self.config.dsn)

    def _connect(self) -> Any:
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError("the postgres store needs psycopg: pip install 'evalh-pipeline[postgres]'") from exc
        try:
            return psycopg.connect(self.config.dsn, autocommit=True,
                                   connect_timeout=max(1, round(self.config.connect_timeout_seconds)))
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.label}: {self._clean(exc)}") from None

    def _clean(self, exc: BaseException) -> str:
        text = redact_dsn(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        for secret in sorted(self.context.secret_values | dsn_passwords(self.config.dsn), key=len, reverse=True):
            text = text.replace(secret, "***")
        return text

    def _migrate(self, conn: Any) -> None:
        schema = self.config.schema_
        if self._up_to_date(conn, schema):
            # No DDL at all: a team role with only SELECT/INSERT/UPDATE/DELETE on the tables
            # (created once by their owner) never needs CREATE or ownership.
            return
        with conn.transaction():
            # Two processes creating the tables at once would race on the catalog: serialize.
            conn.execute("SELECT pg_advisory_xact_lock(727274)")
            for statement in _schema_sql(schema):
                conn.execute(statement)

    def _up_to_date(self, conn: Any, schema: str) -> bool:
        """Every table has its namespace column and every namespace index exists."""
        columns = {table for (table,) in conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = %s AND column_name = 'namespace'",
            [schema])}
        indexes = {name for (name,) in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", [schema])}
        return ({f"evalh_{name}" for name in TABLES} <= columns
                and {f"evalh_{name}_namespace" for name in ("runs", "traces", "results", "baselines")} <= indexes)

    @contextmanager
    def _transaction(self, conn: Any) -> Iterator[None]:
        with conn.transaction():
            yield

    def _sql(self, text: str) -> str:
        # Written with `?`; psycopg takes `%s` (no statement here has a literal % or ?).
        return text.replace("%", "%%").replace("?", "%s")

    def _namespace_filter(self, namespace: Mapping[str, str] | None, alias: str = "") -> tuple[str, list[Any]]:
        if not namespace:
            return "", []
        return f" AND {alias}namespace @> ?::jsonb", [json.dumps(dict(namespace), sort_keys=True)]
