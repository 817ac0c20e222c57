"""What the SQLite and PostgreSQL stores share: the tables, the sync of a run, reading runs back.

Tables (names per dialect, see :class:`Dialect`): ``runs`` (one row per run: run.json),
``run_files`` (config.yaml, cases.jsonl, summary.yaml, ...), ``traces``, ``results``,
``artifacts`` (artifact.json records), ``summaries`` (the summary as JSON) and
``baselines`` (the promoted run per eval and namespace). Every row carries the store's
run namespace as JSON (NULL when it has none, as the rows of a v0.1 database do).

A sync runs in one transaction: a killed process leaves the store as it was before the
stage, and the next sync (after ``--resume``) brings it level with the run directory.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh_pipeline.store.jsonl import complete_lines_digest
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic
from evalh_pipeline.outputs.stores import records
from evalh_pipeline.outputs.stores.base import ReadableStore, StoreConfigT, StoredRun, StoreError, namespace_json
from evalh_pipeline.outputs.stores.records import Row

# Per-row tables: (logical name, key columns after run_id, extra indexed columns).
ROW_TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "traces": (("case_id", "variant_name", "sample"), ("started_at", "error_type")),
    "results": (("case_id", "variant_name", "sample", "evaluator"), ("started_at",)),
    "artifacts": (("case_id", "variant_name", "sample"), ("path",)),
    "run_files": (("name",), ()),
}


@dataclass(frozen=True)
class Dialect:
    """How one database spells the shared SQL."""

    tables: dict[str, str]       # logical name -> table name
    json_param: str              # placeholder for a JSON value ("?" or "?::jsonb")

    def t(self, name: str) -> str:
        return self.tables[name]


class SqlStore(ReadableStore[StoreConfigT]):
    """A :class:`ReadableStore` over a DB-API connection; subclasses connect and migrate."""

    dialect: Dialect

    def __init__(self, config: Mapping[str, Any], context: Any) -> None:
        super().__init__(config, context)
        self._conn: Any = None
        # False for a v0.1 database whose keys have no `sample`: it cannot hold repeated samples.
        self._sample_keys = True

    # -- connection (subclasses) -------------------------------------------------------

    def _connect(self) -> Any:
        raise NotImplementedError

    def _migrate(self, conn: Any) -> None:
        """Create missing tables and add missing columns in place."""
        raise NotImplementedError

    @contextmanager
    def _transaction(self, conn: Any) -> Iterator[None]:
        raise NotImplementedError

    def _sql(self, text: str) -> str:
        """The statement with this driver's placeholders (written with ``?``)."""
        return text

    def _namespace_filter(self, namespace: Mapping[str, str] | None, alias: str = "") -> tuple[str, list[Any]]:
        raise NotImplementedError

    def _payload_text(self, value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    @property
    def conn(self) -> Any:
        if self._conn is None:
            conn = self._connect()
            try:
                self._migrate(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _execute(self, sql: str, params: Iterable[Any] = ()) -> Any:
        return self.conn.execute(self._sql(sql), list(params))

    # -- writing -----------------------------------------------------------------------

    def write_run(self, run_dir: RunDirectory, stage: str) -> None:
        meta = run_dir.read_meta()
        ns = namespace_json(self.namespace)
        conn = self.conn
        # traces.jsonl / results.jsonl whose complete lines hash as when this store last took
        # them: nothing to compare (most stages change neither). Their content, never their
        # stat: a file rewritten with its size and mtime kept is compared again. The state is
        # written after commit.
        state_path = run_dir.stores_state
        state = _load_state(state_path)
        mine = state.get(self._state_key(), {})
        seen = {"traces": complete_lines_digest(run_dir.traces), "results": complete_lines_digest(run_dir.results)}
        with self._transaction(conn):
            self._write_run_row(run_dir.run_id, meta, ns)
            self._sync_rows("run_files", run_dir.run_id, ns, records.file_rows(run_dir))
            if not seen["traces"] or mine.get("traces") != seen["traces"]:
                self._sync_rows("traces", run_dir.run_id, ns, records.trace_rows(run_dir))
            if not seen["results"] or mine.get("results") != seen["results"]:
                self._sync_rows("results", run_dir.run_id, ns, records.result_rows(run_dir))
            self._sync_rows("artifacts", run_dir.run_id, ns, records.artifact_rows(run_dir))
            self._sync_summary(run_dir.run_id, ns, records.summary_payload(run_dir))
        state = _load_state(state_path)
        state[self._state_key()] = seen
        write_atomic(state_path, json.dumps(state, sort_keys=True) + "\n")

    def _state_key(self) -> str:
        return f"{self.label}#{namespace_json(self.namespace) or ''}"

    def _write_run_row(self, run_id: str, meta: dict[str, Any], ns: str | None) -> None:
        row = self._execute(f"SELECT namespace FROM {self.dialect.t('runs')} WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            self._execute(
                f"INSERT INTO {self.dialect.t('runs')} (run_id, eval_name, created_at, namespace, meta) "
                f"VALUES (?, ?, ?, {self.dialect.json_param}, ?)",
                [run_id, meta.get("eval_name"), meta.get("created_at"), ns, json.dumps(meta, sort_keys=True)],
            )
            return
        held = row[0] if row[0] is None or isinstance(row[0], dict) else json.loads(row[0])
        if (held or None) != (self.namespace or None):
            raise StoreError(f"run {run_id} is already in this store under namespace {held or {}}, "
                             f"not {self.namespace or {}}: a run belongs to one namespace")

    def _sync_rows(self, table: str, run_id: str, ns: str | None, rows: Iterable[Row]) -> None:
        """Insert new rows, replace changed ones, delete those the run directory no longer has."""
        key_cols, extra_cols = ROW_TABLES[table]
        name = self.dialect.t(table)
        held: dict[tuple[Any, ...], str | None] = {
            tuple(r[:-1]): r[-1]
            for r in self._execute(f"SELECT {', '.join(key_cols)}, digest FROM {name} WHERE run_id = ?", [run_id])
        }
        payload_col = "content" if table == "run_files" else "payload"
        cols = ["run_id", *key_cols, *extra_cols, "namespace", "digest", payload_col]
        marks = ["?"] * (len(cols) - 3) + [self.dialect.json_param, "?",
                                           "?" if table == "run_files" else self.dialect.json_param]
        updates = ", ".join(f"{c} = excluded.{c}" for c in (*extra_cols, "namespace", "digest", payload_col))
        upsert = (f"INSERT INTO {name} ({', '.join(cols)}) VALUES ({', '.join(marks)}) "
                  f"ON CONFLICT (run_id, {', '.join(key_cols)}) DO UPDATE SET {updates}")
        batch: list[list[Any]] = []
        seen: set[tuple[Any, ...]] = set()
        for row in rows:
            seen.add(row.key)
            if held.get(row.key) == row.digest:
                continue  # write-once: a record the store holds is not written again
            if not self._sample_keys and "sample" in key_cols and row.key[2]:
                raise StoreError(f"this database was created by an older version whose {table} keys have no "
                                 "sample: point the store at a new database file for runs with samples_per_case > 1")
            batch.append([run_id, *row.key, *(row.columns.get(c) for c in extra_cols), ns, row.digest, row.text])
            if len(batch) >= 500:
                self._executemany(upsert, batch)
                batch = []
        if batch:
            self._executemany(upsert, batch)
        stale = [key for key in held if key not in seen]
        where = " AND ".join(f"{c} = ?" for c in ("run_id", *key_cols))
        if stale:
            self._executemany(f"DELETE FROM {name} WHERE {where}", [[run_id, *key] for key in stale])

    def _executemany(self, sql: str, params: list[list[Any]]) -> None:
        self.conn.cursor().executemany(self._sql(sql), params)

    def _sync_summary(self, run_id: str, ns: str | None, row: Row | None) -> None:
        name = self.dialect.t("summaries")
        if row is None:
            self._execute(f"DELETE FROM {name} WHERE run_id = ?", [run_id])
            return
        held = self._execute(f"SELECT digest FROM {name} WHERE run_id = ?", [run_id]).fetchone()
        if held is not None and held[0] == row.digest:
            return
        j = self.dialect.json_param
        self._execute(
            f"INSERT INTO {name} (run_id, started_at, namespace, digest, payload) VALUES (?, ?, {j}, ?, {j}) "
            "ON CONFLICT (run_id) DO UPDATE SET started_at = excluded.started_at, namespace = excluded.namespace, "
            "digest = excluded.digest, payload = excluded.payload",
            [run_id, row.columns["started_at"], ns, row.digest, row.text],
        )

    def record_baseline(self, eval_name: str, run_id: str, promoted_at: str) -> None:
        name = self.dialect.t("baselines")
        ns = namespace_json(self.namespace)
        with self._transaction(self.conn):
            self._execute(
                f"INSERT INTO {name} (eval_name, namespace_key, namespace, run_id, promoted_at) "
                f"VALUES (?, ?, {self.dialect.json_param}, ?, ?) ON CONFLICT (eval_name, namespace_key) "
                "DO UPDATE SET run_id = excluded.run_id, promoted_at = excluded.promoted_at",
                [eval_name, ns or "", ns, run_id, promoted_at],
            )

    # -- reading -----------------------------------------------------------------------

    def current_baseline(self, eval_name: str, namespace: Mapping[str, str] | None = None) -> str | None:
        where, params = self._namespace_filter(namespace)
        row = self._execute(
            f"SELECT run_id FROM {self.dialect.t('baselines')} WHERE eval_name = ?{where} "
            "ORDER BY promoted_at DESC LIMIT 1", [eval_name, *params]).fetchone()
        return row[0] if row else None

    def list_runs(self, namespace: Mapping[str, str] | None = None, eval_name: str | None = None) -> list[StoredRun]:
        where, params = self._namespace_filter(namespace, "r.")
        runs = {}
        for run_id, name, created, ns, traces, results in self._execute(
            f"SELECT r.run_id, r.eval_name, r.created_at, r.namespace, "
            f"(SELECT count(*) FROM {self.dialect.t('traces')} t WHERE t.run_id = r.run_id), "
            f"(SELECT count(*) FROM {self.dialect.t('results')} s WHERE s.run_id = r.run_id) "
            f"FROM {self.dialect.t('runs')} r WHERE 1 = 1{where}", params,
        ):
            runs[run_id] = StoredRun(run_id, name, _as_dict(ns), created, traces, results)
        # Runs written by an older version have traces but no runs row.
        twhere, tparams = self._namespace_filter(namespace, "t.")
        legacy = list(self._execute(
            f"SELECT t.run_id, count(*) FROM {self.dialect.t('traces')} t "
            f"WHERE t.run_id NOT IN (SELECT run_id FROM {self.dialect.t('runs')}){twhere} GROUP BY t.run_id", tparams,
        ))
        for run_id, traces in legacy:
            (ns,) = self._execute(
                f"SELECT namespace FROM {self.dialect.t('traces')} WHERE run_id = ? LIMIT 1", [run_id]).fetchone()
            runs[run_id] = StoredRun(run_id, None, _as_dict(ns), None, traces, 0)
        found = [r for r in runs.values() if eval_name is None or r.eval_name == eval_name]
        return sorted(found, key=lambda r: r.run_id)

    def export_run(self, run_id: str, dest: Path, namespace: Mapping[str, str] | None = None) -> None:
        listed = {r.run_id: r for r in self.list_runs(namespace)}
        if run_id not in listed:
            scope = f" in namespace {', '.join(f'{k}={v}' for k, v in namespace.items())}" if namespace else ""
            raise LookupError(f"no run {run_id!r} in {self.label}{scope}")
        row = self._execute(f"SELECT meta FROM {self.dialect.t('runs')} WHERE run_id = ?", [run_id]).fetchone()
        if row is not None:
            meta = json.loads(row[0])
        else:  # a run an older version wrote: no run.json was kept
            variants = [v for (v,) in self._execute(
                f"SELECT DISTINCT variant_name FROM {self.dialect.t('traces')} WHERE run_id = ? ORDER BY 1", [run_id])]
            meta = {"run_id": run_id, "eval_name": None, "variants": variants}
        meta["store"] = {"store": self.label, "namespace": listed[run_id].namespace or {}}

        def lines(table: str, order: str) -> Iterator[str]:
            for (payload,) in self._execute(
                f"SELECT payload FROM {self.dialect.t(table)} WHERE run_id = ? ORDER BY {order}", [run_id]
            ):
                yield self._payload_text(payload)

        files = list(self._execute(
            f"SELECT name, content FROM {self.dialect.t('run_files')} WHERE run_id = ?", [run_id]))
        artifacts = (
            (where, self._payload_text(payload)) for where, payload in self._execute(
                f"SELECT path, payload FROM {self.dialect.t('artifacts')} WHERE run_id = ? "
                "ORDER BY variant_name, case_id, sample", [run_id])
        )
        records.write_run_directory(
            dest, meta, files,
            lines("traces", "variant_name, case_id, sample"),
            lines("results", "variant_name, case_id, sample, evaluator"),
            artifacts,
        )


def _load_state(path: Path) -> dict[str, Any]:
    try:
        state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return state
    except (FileNotFoundError, json.JSONDecodeError):
        return {}  # no or broken state: a full compare, nothing worse


def _as_dict(value: Any) -> dict[str, str] | None:
    if value is None or isinstance(value, dict):
        return value
    decoded: dict[str, str] = json.loads(value)
    return decoded
