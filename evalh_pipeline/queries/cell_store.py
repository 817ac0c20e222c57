"""A run's cell store: what the queries read of the traces and results, as Parquet.

The summary of a 100,000-trace run reads 500,000 result lines (a quarter of a gigabyte of
JSON) to count verdicts; after re-judging one evaluator of five, four fifths of those lines
are the same as before. The store keeps, in the run's ``.cells/`` folder:

    store.json          the format, the digest of the traces it describes, its files, memos
    t-<key>.parquet     the cell columns of every trace (queries/cells.py CELL_TRACES_SQL),
                        keyed by the digest of traces.jsonl's complete lines
    r-<key>.parquet     the verdict columns (VERDICTS_SQL) of one results file: of one
                        evaluator's file of the results store (store/results_store.py, named
                        by its content hash), or of results.jsonl by its digest in a run
                        without a store (written before it, or by eval-harness)

Every key is a content hash with the store's format in it: a Parquet is used only for the
exact content it was made from, whatever the files' inodes, sizes or times. After an
evaluator is re-judged, only its new file is read again.

It is a cache; the JSONL files stay the record. A reader (compare, drift) uses the store
only when its manifest has this format and describes the run's current contents, and every
file it names reads back; otherwise it reads the JSONL. The writer (the summary, under the
run's lock) reuses a Parquet only under its key, and rebuilds anything missing, stale or
unreadable. Deleting ``.cells/`` changes nothing but the time.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from evalh_pipeline.queries.cells import CELL_TRACES_SQL, VERDICTS_SQL
from evalh_pipeline.queries.sql import RESULT_COLUMNS, TRACE_COLUMNS, duckdb, load_table, one_row
from evalh_pipeline.store.jsonl import complete_lines_digest, count_lines
from evalh_pipeline.store.results_store import read_store
from evalh_pipeline.store.run_dir import RunDirectory

if TYPE_CHECKING:
    from collections.abc import Sequence

# Bumped whenever what a Parquet holds or what store.json says changes: older stores are
# then stale as a whole. The SQL is part of the key too, as a guard.
FORMAT = 2
_FORMAT_KEY = hashlib.sha256(f"{FORMAT}\n{CELL_TRACES_SQL}\n{VERDICTS_SQL}".encode()).hexdigest()[:16]
MANIFEST = "store.json"
T = TypeVar("T")


@dataclass(frozen=True)
class _Source:
    """A results file the verdicts come from, its content key, and its evaluator (None:
    results.jsonl, any evaluator's lines)."""

    path: Path
    key: str
    evaluator: str | None

    @property
    def part(self) -> str:
        return f"r-{_key('results', self.key)}.parquet"


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps([_FORMAT_KEY, *parts]).encode()).hexdigest()[:32]


def _literal(path: Path) -> str:
    return str(path).replace("'", "''")


def _sources(run_dir: RunDirectory) -> list[_Source]:
    """The run's results files: its results store's, or results.jsonl without a store."""
    entries = read_store(run_dir)
    if entries is not None:
        return [_Source(run_dir.results_store / e.file, e.file, name) for name, e in entries.items()]
    if not run_dir.results.exists():
        return []
    return [_Source(run_dir.results, complete_lines_digest(run_dir.results), None)]


def _traces_part(digest: str) -> str:
    return f"t-{_key('traces', digest)}.parquet"


def _read_manifest(run_dir: RunDirectory) -> dict[str, Any] | None:
    try:
        data = json.loads((run_dir.cells_cache / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != _FORMAT_KEY or not _well_formed(data):
        return None
    return data


def _well_formed(data: dict[str, Any]) -> bool:
    """Whether a manifest has the shape this version writes (a damaged one is not used at all)."""
    def names(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)

    evaluators = data.get("evaluators", {})
    memo = data.get("memo", [])
    cases = data.get("cases")
    return (isinstance(data.get("traces"), str) and isinstance(data.get("traces_part"), str)
            and names(data.get("result_parts"))
            and (cases is None or (isinstance(cases, list) and len(cases) == 2 and type(cases[1]) is int))
            and isinstance(evaluators, dict) and all(names(v) for v in evaluators.values())
            and isinstance(memo, list)
            and all(isinstance(m, dict) and isinstance(m.get("traces_part"), str) and names(m.get("parts"))
                    for m in memo))


def _view_parts(con: duckdb.DuckDBPyConnection, view: str, files: Sequence[Path]) -> None:
    """``view`` := the rows of ``files`` in order, read again by each query that uses it (only
    the columns it uses). Every file's footer is read here, so a missing or truncated file
    fails now; a damaged page can still fail a later query (see :attr:`Store.views`)."""
    listed = ", ".join(f"'{_literal(f)}'" for f in files)
    con.execute(f"SELECT count(*) FROM read_parquet([{listed}])").fetchone()
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT * FROM read_parquet([{listed}])")


def load_store(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, *, suffix: str = "") -> bool:
    """Create ``cell_traces{suffix}`` and ``verdicts{suffix}`` from the run's cell store when
    it describes the run's current contents; False (nothing created) when it does not.

    They are views of the store's Parquet files, read again (only the columns used) by each
    query, never copied into DuckDB: compare and the viewer cost the same memory, and no
    copying time, at any run size (benchmarks/README.md, "Memory"). A reader does not hold
    the run's lock, so a newer summary may remove a file meanwhile: a query then fails
    (:data:`StoreGone`), and the caller answers again (:func:`answer_again`).
    """
    data = _read_manifest(run_dir)
    if data is None:
        return False
    sources = _sources(run_dir)
    if data["result_parts"] != [s.part for s in sources] or data["traces"] != complete_lines_digest(run_dir.traces):
        return False
    folder = run_dir.cells_cache
    try:
        _view_parts(con, f"cell_traces{suffix}", [folder / str(data["traces_part"])])
        if sources:
            _view_parts(con, f"verdicts{suffix}", [folder / s.part for s in sources])
        else:
            con.execute(f"CREATE TEMP TABLE verdicts{suffix} AS {VERDICTS_SQL.format(raw=_empty(RESULT_COLUMNS))}")
    except duckdb.Error:
        # Removed by a newer summary meanwhile, or damaged: the JSONL answer instead.
        drop_rows(con, suffix=suffix)
        return False
    return True


def drop_rows(con: duckdb.DuckDBPyConnection, *, suffix: str = "") -> None:
    """Drop ``cell_traces{suffix}`` and ``verdicts{suffix}``, views of a store or tables."""
    for name in (f"cell_traces{suffix}", f"verdicts{suffix}"):
        (views,) = one_row(con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = $name",
                                       {"name": name}))
        con.execute(f"DROP {'VIEW' if views else 'TABLE'} IF EXISTS {name}")


# What a query over the store's views raises when a file it names is gone (a newer summary
# replaced the store) or unreadable.
StoreGone = duckdb.IOException


def answer_again(query: Callable[[], T]) -> T:
    """``query()``, made once more when a file of a cell store it read went away meanwhile
    (the second time reads the newer store, or the JSONL when that does not match either)."""
    try:
        return query()
    except StoreGone:
        return query()


@dataclass
class Store:
    """The cell store as one summary saw it: its files, and what was derived from them.

    :meth:`recall` / :meth:`remember` keep small results computed from one evaluator's
    verdicts (e.g. its paired statistics against the baseline variant) with the names of
    the files they came from, so the next summary reuses them while those files stand.
    """

    run_dir: RunDirectory
    saved: bool = False
    traces: str = ""  # the digest of the traces the store describes
    traces_part: str = ""
    result_parts: list[str] = field(default_factory=list)
    evaluators: dict[str, list[str]] = field(default_factory=dict)  # part -> evaluators in it
    memo: list[dict[str, Any]] = field(default_factory=list)
    cases: list[Any] | None = None  # [digest of cases.jsonl, its cases], as counted last
    # ``cell_traces`` (and ``verdicts`` when saved) are views of the store's files, read by
    # each query: a query that fails on a damaged file should drop the store
    # (:meth:`discard`) and summarize from the JSONL.
    views: bool = False
    _changed: bool = False

    def verdicts_of(self, evaluators: Sequence[str]) -> str | None:
        """A relation of the rows of ``verdicts`` in the store's files that hold ``evaluators``'
        verdicts (others' too: filter by evaluator), when ``verdicts`` is a view of the store;
        None otherwise (read ``verdicts``)."""
        if not (self.saved and self.views):
            return None
        wanted = set(evaluators)
        files = [self.run_dir.cells_cache / name for name in self.result_parts
                 if wanted.intersection(self.evaluators.get(name, ()))]
        if not files:
            return None
        return "read_parquet([" + ", ".join(f"'{_literal(f)}'" for f in files) + "])"

    def discard(self) -> None:
        """Drop the store (its manifest and files): the next summary rebuilds it from the JSONL."""
        folder = self.run_dir.cells_cache
        (folder / MANIFEST).unlink(missing_ok=True)
        for entry in folder.iterdir():
            try:
                entry.unlink()
            except OSError:
                pass  # not ours to remove, or gone already
        self.saved = False

    def cases_total(self) -> int:
        """The cases of the run's cases snapshot (its complete, non-blank lines), counted once
        per content of cases.jsonl."""
        digest = complete_lines_digest(self.run_dir.cases)
        if self.cases is not None and self.cases[0] == digest:
            return int(self.cases[1])
        count = count_lines(self.run_dir.cases)
        self.cases = [digest, count]
        self._changed = True
        return count

    def parts_of(self, evaluator: str) -> list[str] | None:
        """The files holding ``evaluator``'s verdicts (None: not known, the store was not saved)."""
        if not self.saved:
            return None
        return [name for name in self.result_parts if evaluator in self.evaluators.get(name, ())]

    def _entry(self, kind: str, evaluator: str, argument: Any) -> dict[str, Any] | None:
        parts = self.parts_of(evaluator)
        if parts is None:
            return None
        return {"kind": kind, "evaluator": evaluator, "argument": argument, "traces_part": self.traces_part,
                "parts": parts}

    def recall(self, kind: str, evaluator: str, argument: Any) -> Any | None:
        """What :meth:`remember` kept for the same files, or None."""
        entry = self._entry(kind, evaluator, argument)
        if entry is None:
            return None
        for kept in self.memo:
            if {k: v for k, v in kept.items() if k != "value"} == entry:
                return kept["value"]
        return None

    def remember(self, kind: str, evaluator: str, argument: Any, value: Any) -> None:
        """Keep ``value`` (JSON) as derived from ``evaluator``'s files; saved by :meth:`save`."""
        entry = self._entry(kind, evaluator, argument)
        if entry is not None:
            self.memo.append({**entry, "value": value})
            self._changed = True

    def save(self) -> None:
        """Write what was remembered (the summary holds the run's lock: the files are those read)."""
        if self.saved and self._changed:
            _write_manifest(self)
            self._changed = False


def refresh_store(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, traces_digest: str | None = None) -> Store:
    """Create ``cell_traces`` and ``verdicts`` for the run, from its cell store where it holds
    the same contents and from the JSONL for the rest, and save the store.

    Call it holding the run's lock (the summary does), so that no writer that respects the
    lock changes the files meanwhile. ``traces_digest``: the digest of traces.jsonl's
    complete lines kept by the appender of this launch's traces stage (None: hashed here).
    """
    folder = run_dir.cells_cache
    run_dir.remove_stale_temp_files("cells")  # a killed summary's (this writer holds the lock)
    digest = traces_digest or complete_lines_digest(run_dir.traces)
    sources = _sources(run_dir)
    store = Store(run_dir, traces=digest)
    old = _read_manifest(run_dir) or {}
    if old.get("cases") is not None:
        store.cases = old["cases"]
    try:
        folder.mkdir(exist_ok=True)
        writable = True
    except OSError:
        writable = False  # a read-only run directory: answered from the JSONL, nothing saved

    writable = writable and run_dir.traces.exists()  # no traces yet: nothing worth keeping
    traces_part = folder / _traces_part(digest)
    # The queries read the traces' cell columns from the store's file, a few columns at a
    # time, rather than from a copy in DuckDB's memory (see Store.views).
    store.views = _view_readable(con, "cell_traces", traces_part)
    if not store.views:
        load_table(con, "trace_rows", run_dir.traces, TRACE_COLUMNS, str(run_dir.traces))
        cell_rows = CELL_TRACES_SQL.format(raw="trace_rows")
        writable = writable and _save(con, cell_rows, traces_part, run_dir)
        store.views = writable and _view_readable(con, "cell_traces", traces_part)
        if not store.views:
            con.execute(f"CREATE TEMP TABLE cell_traces AS {cell_rows}")
        con.execute("DROP TABLE trace_rows")

    evaluators = {name: list(names) for name, names in (old.get("evaluators") or {}).items()
                  if isinstance(names, list)}
    if writable and _build(con, run_dir, sources, evaluators):
        files = [folder / s.part for s in sources]
        try:
            if files:
                # Read by each query rather than copied into a table first: the queries need
                # a few columns each (the store's files stay put: the summary holds the lock).
                _view_parts(con, "verdicts", files)
            else:
                con.execute(f"CREATE TEMP TABLE verdicts AS {VERDICTS_SQL.format(raw=_empty(RESULT_COLUMNS))}")
        except duckdb.Error:
            # A damaged Parquet: this summary reads the JSONL below, the next rebuilds the store.
            con.execute("DROP VIEW IF EXISTS verdicts")
            con.execute("DROP TABLE IF EXISTS verdicts")
            (folder / MANIFEST).unlink(missing_ok=True)
        else:
            names = [s.part for s in sources]
            store.saved, store.traces_part, store.result_parts = True, traces_part.name, names
            store.evaluators = {name: evaluators[name] for name in names}
            # What earlier summaries derived from files that are still part of the store.
            store.memo = [m for m in old.get("memo", []) if isinstance(m, dict)
                          and m.get("traces_part") == traces_part.name and set(m.get("parts", [])) <= set(names)]
            _write_manifest(store)
            return store
    _load_verdicts(con, "verdicts", sources)
    return store


def _load_verdicts(con: duckdb.DuckDBPyConnection, table: str, sources: list[_Source]) -> None:
    """``table`` := the verdicts of every source, read from the JSONL, in order."""
    con.execute(f"CREATE TEMP TABLE {table} AS {VERDICTS_SQL.format(raw=_empty(RESULT_COLUMNS))}")
    for source in sources:
        load_table(con, "result_rows", source.path, RESULT_COLUMNS, str(source.path))
        con.execute(f"INSERT INTO {table} {VERDICTS_SQL.format(raw='result_rows')}")
        con.execute("DROP TABLE result_rows")


def _build(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, sources: list[_Source],
           evaluators: dict[str, list[str]]) -> bool:
    """Write the Parquet of every source that has none yet (``evaluators``: part -> the
    evaluators it holds, filled in); False when one could not be written."""
    folder = run_dir.cells_cache
    for source in sources:
        if source.part in evaluators and (folder / source.part).exists():
            continue
        load_table(con, "result_rows", source.path, RESULT_COLUMNS, str(source.path))
        try:
            if source.evaluator is not None:
                evaluators[source.part] = [source.evaluator]
            else:
                evaluators[source.part] = [e for (e,) in con.execute(
                    "SELECT DISTINCT evaluator FROM result_rows WHERE evaluator IS NOT NULL ORDER BY 1").fetchall()]
            if not _save(con, VERDICTS_SQL.format(raw="result_rows"), folder / source.part, run_dir):
                return False
        finally:
            con.execute("DROP TABLE IF EXISTS result_rows")
    return True


def _empty(columns: dict[str, str]) -> str:
    nulls = ", ".join(f"NULL::{kind} AS {name}" for name, kind in columns.items())
    return f"(SELECT {nulls} WHERE false)"


def _view_readable(con: duckdb.DuckDBPyConnection, view: str, path: Path) -> bool:
    """``view`` := ``path``'s rows when it exists and its footer reads back (its name is its key)."""
    if not path.exists():
        return False
    try:
        _view_parts(con, view, [path])
    except duckdb.Error:
        con.execute(f"DROP VIEW IF EXISTS {view}")
        return False
    return True


def _save(con: duckdb.DuckDBPyConnection, query: str, path: Path, run_dir: RunDirectory) -> bool:
    """Write ``query``'s rows to ``path`` atomically; False when it cannot be written (then the
    store is not saved, and the queries read the JSONL)."""
    tmp = run_dir.temp_file("cells")
    try:
        con.execute(f"COPY ({query}) TO '{_literal(tmp)}' (FORMAT parquet)")
        os.replace(tmp, path)
    except (OSError, duckdb.Error):
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def _write_manifest(store: Store) -> None:
    """Save which Parquet files describe the run's contents now, and remove every other file of the store."""
    folder = store.run_dir.cells_cache
    tmp = store.run_dir.temp_file("cells")
    try:
        tmp.write_text(json.dumps({"format": _FORMAT_KEY, "traces": store.traces, "traces_part": store.traces_part,
                                   "result_parts": store.result_parts, "evaluators": store.evaluators,
                                   "memo": store.memo, "cases": store.cases}),
                       encoding="utf-8")
        os.replace(tmp, folder / MANIFEST)
    except OSError:
        tmp.unlink(missing_ok=True)
        return
    keep = {MANIFEST, store.traces_part, *store.result_parts}
    for entry in folder.iterdir():
        if entry.name not in keep:
            try:
                entry.unlink()
            except OSError:
                pass  # not ours to remove, or gone already: left for the next summary
