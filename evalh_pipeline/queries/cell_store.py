"""A run's cell store: what the queries read of traces.jsonl and results.jsonl, as Parquet.

The summary of a 100,000-trace run reads 500,000 result lines (a quarter of a gigabyte of
JSON) to count verdicts; after re-judging one evaluator of five, four fifths of those lines
are the same bytes as before. The store keeps, in the run's ``.cells/`` folder:

    store.json              which files describe which traces.jsonl / results.jsonl (and
                            how many cases cases.jsonl holds, with that file's identity)
    t-<key>.parquet         the cell columns of every trace (queries/cells.py CELL_TRACES_SQL)
    r-<key>.parquet         the verdict columns of one range of results.jsonl (VERDICTS_SQL)

results.jsonl is cut into ranges by its evaluator blocks (store/result_slices.py: ranges of
one evaluator's lines, each with an id that survives a byte-for-byte copy into a rewritten
file) and the lines between them (gaps). A block's Parquet is named after its id, so after
an evaluator is re-judged only its new block is read again. A gap's Parquet is named after
the file and the range; when the slice manifest records where a gap's lines came from (a
range of the file it was rewritten from, less the re-judged slice's lines, as after the
first re-evaluation of a run judged trace by trace), its Parquet is derived from that
range's Parquet, less the slice's rows, checked against the number of lines the writer
left out; otherwise the range is read.

It is a cache; the JSONL files stay the record. Recovery rule: ``store.json`` names the
exact files it describes (inode, size, mtime in ns of traces.jsonl and results.jsonl) and a
format number. A reader (compare, drift) uses the store only when both match and every file
it names reads back; otherwise it reads the JSONL. The writer (the summary, under the run's
lock) reuses a Parquet only when its name says it holds the same lines (the traces file's
identity, a block id from a slice manifest that matches results.jsonl, or results.jsonl's
identity and the range), and rebuilds anything missing, stale or unreadable from the JSONL.
Another writer of results.jsonl (a hand edit, ``evalh retry-failed``, a tool that does not
know the manifest) changes its identity, so nothing derived from the old file is used.
Deleting ``.cells/`` changes nothing but the time.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.queries.cells import CELL_TRACES_SQL, VERDICTS_SQL
from evalh_pipeline.queries.sql import RESULT_COLUMNS, TRACE_COLUMNS, duckdb, load_table
from evalh_pipeline.store.jsonl import count_lines
from evalh_pipeline.store.result_slices import file_identity, recorded_blocks, recorded_gaps
from evalh_pipeline.store.results_file import copy_range
from evalh_pipeline.store.run_dir import RunDirectory

if TYPE_CHECKING:
    from collections.abc import Sequence

# Bumped whenever what a Parquet holds changes (its SQL, its columns): older stores are
# then stale as a whole. The SQL is part of the key too, as a guard.
FORMAT = 1
_FORMAT_KEY = hashlib.sha256(f"{FORMAT}\n{CELL_TRACES_SQL}\n{VERDICTS_SQL}".encode()).hexdigest()[:16]
MANIFEST = "store.json"


@dataclass(frozen=True)
class _Range:
    """A range of results.jsonl and the name of the Parquet of its verdicts."""

    start: int
    end: int
    name: str
    evaluator: str | None = None  # a block's evaluator; None: any evaluator's lines
    # The range it was copied from (the Parquet name of that range) without a slice's lines:
    # (name, variants, evaluators, lines left out), from the slice manifest's gaps.
    parent: tuple[str, list[str], list[str], int] | None = None


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps([_FORMAT_KEY, *parts]).encode()).hexdigest()[:32]


def _literal(path: Path) -> str:
    return str(path).replace("'", "''")


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
    return (isinstance(data.get("traces_part"), str) and names(data.get("result_parts"))
            and (cases is None or (isinstance(cases, list) and len(cases) == 2 and type(cases[1]) is int))
            and isinstance(evaluators, dict) and all(names(v) for v in evaluators.values())
            and isinstance(memo, list)
            and all(isinstance(m, dict) and isinstance(m.get("traces_part"), str) and names(m.get("parts"))
                    for m in memo))


def _read_parts(con: duckdb.DuckDBPyConnection, table: str, files: Sequence[Path]) -> None:
    """``table`` := the rows of ``files``, in order (one thread: the scan is in file order)."""
    listed = ", ".join(f"'{_literal(f)}'" for f in files)
    con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM read_parquet([{listed}])")


def _view_parts(con: duckdb.DuckDBPyConnection, view: str, files: Sequence[Path]) -> None:
    """``view`` := the rows of ``files`` in order, read again by each query that uses it (only
    the columns it uses). Every file's footer is read here, so a missing or truncated file
    fails now; a damaged page can still fail a later query (see :attr:`Store.views`)."""
    listed = ", ".join(f"'{_literal(f)}'" for f in files)
    con.execute(f"SELECT count(*) FROM read_parquet([{listed}])").fetchone()
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT * FROM read_parquet([{listed}])")


def load_store(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, *, suffix: str = "") -> bool:
    """Create ``cell_traces{suffix}`` and ``verdicts{suffix}`` from the run's cell store when
    it describes the run's current files; False (nothing created) when it does not."""
    data = _read_manifest(run_dir)
    if data is None or data.get("traces") != file_identity(run_dir.traces) \
            or data.get("results") != file_identity(run_dir.results):
        return False
    folder = run_dir.cells_cache
    try:
        traces = folder / str(data["traces_part"])
        parts = [folder / str(name) for name in data["result_parts"]]
        _read_parts(con, f"cell_traces{suffix}", [traces])
        if parts:
            _read_parts(con, f"verdicts{suffix}", parts)
        else:
            con.execute(f"CREATE TEMP TABLE verdicts{suffix} AS {VERDICTS_SQL.format(raw=_empty(RESULT_COLUMNS))}")
    except (KeyError, TypeError, duckdb.Error):
        # Removed by a newer summary meanwhile, or damaged: the JSONL answer instead.
        for table in (f"cell_traces{suffix}", f"verdicts{suffix}"):
            con.execute(f"DROP TABLE IF EXISTS {table}")
        return False
    # Files replaced while they were read make the tables a mix: only matching files count.
    if data.get("traces") != file_identity(run_dir.traces) or data.get("results") != file_identity(run_dir.results):
        for table in (f"cell_traces{suffix}", f"verdicts{suffix}"):
            con.execute(f"DROP TABLE {table}")
        return False
    return True


@dataclass
class Store:
    """The cell store as one summary saw it: its files, and what was derived from them.

    :meth:`recall` / :meth:`remember` keep small results computed from one evaluator's
    verdicts (e.g. its paired statistics against the baseline variant) with the names of
    the files they came from, so the next summary reuses them while those files stand.
    """

    run_dir: RunDirectory
    saved: bool = False
    traces_part: str = ""
    result_parts: list[str] = field(default_factory=list)
    evaluators: dict[str, list[str]] = field(default_factory=dict)  # part -> evaluators in it
    memo: list[dict[str, Any]] = field(default_factory=list)
    identities: tuple[Any, Any] = (None, None)
    cases: list[Any] | None = None  # [identity of cases.jsonl, its cases], as counted last
    # ``verdicts`` is a view of the store's files, read by each query: a query that fails on
    # a damaged file should drop the store (:meth:`discard`) and summarize from the JSONL.
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
        """Forget the store (its manifest): the next summary rebuilds it from the JSONL."""
        (self.run_dir.cells_cache / MANIFEST).unlink(missing_ok=True)
        self.saved = False

    def cases_total(self) -> int:
        """The cases of the run's cases snapshot (its complete, non-blank lines), counted once
        per cases.jsonl (by its identity: a file rewritten or replaced is counted again)."""
        path = self.run_dir.cases
        identity = file_identity(path)
        if identity is not None and self.cases is not None and self.cases[0] == identity:
            return int(self.cases[1])
        count = count_lines(path)
        if identity is not None and file_identity(path) == identity:  # not changed while counted
            self.cases = [identity, count]
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
        """Write what was remembered, if the run's files are still the ones the store describes."""
        if self.saved and self._changed and self.identities == (file_identity(self.run_dir.traces),
                                                                file_identity(self.run_dir.results)):
            _write_manifest(self)
            self._changed = False


def refresh_store(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory) -> Store:
    """Create ``cell_traces`` and ``verdicts`` for the run, from its cell store where that still
    holds the same lines and from the JSONL for the rest, and save the store.

    Call it holding the run's lock (the summary does), so that no writer that respects the
    lock changes the files meanwhile; the store is saved only if they did not change.
    """
    folder = run_dir.cells_cache
    traces_id, results_id = file_identity(run_dir.traces), file_identity(run_dir.results)
    store = Store(run_dir, identities=(traces_id, results_id))
    old = _read_manifest(run_dir) or {}
    if old.get("cases") is not None and old["cases"][0] == file_identity(run_dir.cases):
        store.cases = old["cases"]
    known = {old.get("traces_part"), *old.get("result_parts", [])}
    try:
        folder.mkdir(exist_ok=True)
        writable = True
    except OSError:
        writable = False  # a read-only run directory: answered from the JSONL, nothing saved

    writable = writable and traces_id is not None  # no traces yet: nothing worth keeping
    traces_part = folder / f"t-{_key('traces', traces_id)}.parquet"
    if not _reuse(con, "cell_traces", traces_part, known):
        load_table(con, "trace_rows", run_dir.traces, TRACE_COLUMNS, str(run_dir.traces))
        con.execute(f"CREATE TEMP TABLE cell_traces AS {CELL_TRACES_SQL.format(raw='trace_rows')}")
        con.execute("DROP TABLE trace_rows")
        writable = writable and _save(con, "cell_traces", traces_part, run_dir)

    ranges = _ranges(run_dir, results_id)
    evaluators = {name: list(names) for name, names in (old.get("evaluators") or {}).items()
                  if isinstance(names, list)}
    built = _build(con, run_dir, ranges, known, evaluators) if writable else None
    if built is not None:
        files = [folder / piece.name for piece in ranges]
        try:
            if built:
                pass  # every range just read: the verdicts table holds the Parquet's rows, in the same order
            elif files:
                # Read by each query rather than copied into a table first: the queries need
                # a few columns each (the store's files stay put: the summary holds the lock).
                _view_parts(con, "verdicts", files)
                store.views = True
            else:
                con.execute(f"CREATE TEMP TABLE verdicts AS {VERDICTS_SQL.format(raw=_empty(RESULT_COLUMNS))}")
        except duckdb.Error:
            # A damaged Parquet: this summary reads the JSONL below, the next rebuilds the store.
            con.execute("DROP TABLE IF EXISTS verdicts")
            store.views = False
            (folder / MANIFEST).unlink(missing_ok=True)
        else:
            if file_identity(run_dir.traces) == traces_id and file_identity(run_dir.results) == results_id:
                names = [f.name for f in files]
                store.saved, store.traces_part, store.result_parts = True, traces_part.name, names
                store.evaluators = {name: evaluators[name] for name in names}
                # What earlier summaries derived from files that are still part of the store.
                store.memo = [m for m in old.get("memo", []) if isinstance(m, dict)
                              and m.get("traces_part") == traces_part.name and set(m.get("parts", [])) <= set(names)]
                _write_manifest(store)
            return store
    load_table(con, "result_rows", run_dir.results, RESULT_COLUMNS, str(run_dir.results))
    con.execute(f"CREATE TEMP TABLE verdicts AS {VERDICTS_SQL.format(raw='result_rows')}")
    con.execute("DROP TABLE result_rows")
    return store


# Below this share of results.jsonl to read again, ranges are copied out and read one by
# one; above it, the whole file is read once and split by evaluator.
_READ_WHOLE_SHARE = 0.5


def _build(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, ranges: list[_Range], known: set[Any],
           evaluators: dict[str, list[str]]) -> bool | None:
    """Write the Parquet of every range that has none yet (``evaluators``: part -> the
    evaluators it holds, filled in); None when one could not be written. True when every
    range was just read and the ``verdicts`` table is made already (the rows of all the
    ranges' Parquet files, in order), False when it is to be read from them."""
    folder = run_dir.cells_cache
    missing = [piece for piece in ranges
               if not (piece.name in known and piece.name in evaluators and (folder / piece.name).exists())]
    if not missing:
        return False
    size = ranges[-1].end
    blocks = [piece.evaluator for piece in ranges]
    if (sum(p.end - p.start for p in missing) > _READ_WHOLE_SHARE * size and None not in blocks
            and len(set(blocks)) == len(blocks)):
        # Each range is the only one of its evaluator: its rows are that evaluator's, in order.
        load_table(con, "result_rows", run_dir.results, RESULT_COLUMNS, str(run_dir.results))
        try:
            for piece in missing:
                query = VERDICTS_SQL.format(raw="result_rows") + f" WHERE evaluator = '{_quote(piece.evaluator)}'"
                if not _write_part(con, query, piece, run_dir, evaluators):
                    return None
            if len(missing) == len(ranges):
                # The ranges are the file's blocks in file order: the whole file's rows are
                # their Parquet files' rows, in the same order, without reading those back.
                con.execute(f"CREATE TEMP TABLE verdicts AS {VERDICTS_SQL.format(raw='result_rows')}")
                return True
        finally:
            con.execute("DROP TABLE result_rows")
        return False
    for piece in missing:
        if _derive(con, run_dir, piece, known, "derived_rows"):
            query = "SELECT * FROM derived_rows"
        else:
            _read_range(con, run_dir, piece, "range_rows")
            query = VERDICTS_SQL.format(raw="range_rows")
        try:
            # The only range (a results file without blocks, as a run writes it) is kept as the
            # verdicts table itself rather than read back from its Parquet.
            if not _write_part(con, query, piece, run_dir, evaluators, keep_as="verdicts" if len(ranges) == 1 else None):
                return None
        finally:
            con.execute("DROP TABLE IF EXISTS range_rows")
            con.execute("DROP TABLE IF EXISTS derived_rows")
    return len(ranges) == 1


def _quote(text: str | None) -> str:
    return (text or "").replace("'", "''")


def _write_part(con: duckdb.DuckDBPyConnection, query: str, piece: _Range, run_dir: RunDirectory,
                evaluators: dict[str, list[str]], keep_as: str | None = None) -> bool:
    """Save ``query``'s rows as ``piece``'s Parquet (``keep_as``: and keep them as that table)."""
    con.execute(f"CREATE TEMP TABLE part_rows AS {query}")
    saved = False
    try:
        if piece.evaluator is not None:
            evaluators[piece.name] = [piece.evaluator]
        else:
            evaluators[piece.name] = [e for (e,) in con.execute(
                "SELECT DISTINCT evaluator FROM part_rows WHERE evaluator IS NOT NULL ORDER BY 1").fetchall()]
        saved = _save(con, "part_rows", run_dir.cells_cache / piece.name, run_dir)
        return saved
    finally:
        if saved and keep_as is not None:
            con.execute(f"ALTER TABLE part_rows RENAME TO {keep_as}")
        else:
            con.execute("DROP TABLE part_rows")


def _empty(columns: dict[str, str]) -> str:
    nulls = ", ".join(f"NULL::{kind} AS {name}" for name, kind in columns.items())
    return f"(SELECT {nulls} WHERE false)"


def _reuse(con: duckdb.DuckDBPyConnection, table: str, path: Path, known: set[Any]) -> bool:
    """``table`` := ``path``'s rows when the old manifest listed it and it reads back."""
    if path.name not in known or not path.exists():
        return False
    try:
        _read_parts(con, table, [path])
    except duckdb.Error:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        return False
    return True


def _ranges(run_dir: RunDirectory, results_id: list[int] | None) -> list[_Range]:
    """results.jsonl cut at its recorded evaluator blocks (when the slice manifest matches the
    file and its blocks fit it), in file order; one range for the whole file otherwise."""
    if results_id is None or results_id[1] == 0:
        return []
    size = results_id[1]
    ranges: list[_Range] = []
    position = 0

    gaps = {(start, end): lineage for start, end, lineage in recorded_gaps(run_dir)}

    def outside(start: int, end: int) -> None:
        if end > start:
            ranges.append(_Range(start, end, _range_name(results_id, start, end), parent=_parent(gaps.get((start, end)))))

    blocks = sorted(recorded_blocks(run_dir), key=lambda b: b[2])
    for evaluator, variants, start, end, block_id in blocks:
        if start < position or end < start or end > size:
            return [_Range(0, size, _range_name(results_id, 0, size))]
        outside(position, start)
        if block_id:
            ranges.append(_Range(start, end, _block_name(block_id, evaluator, list(variants), end - start), evaluator))
        else:
            outside(start, end)
        position = end
    outside(position, size)
    return ranges


def _range_name(file: list[int] | None, start: int, end: int) -> str:
    return f"r-{_key('range', file, start, end)}.parquet"


def _block_name(block_id: str, evaluator: str, variants: list[str], length: int) -> str:
    return f"r-{_key('block', block_id, evaluator, variants, length)}.parquet"


def _parent(lineage: dict[str, Any] | None) -> tuple[str, list[str], list[str], int] | None:
    """The Parquet name of the range a gap was copied from, and what was left out of it."""
    if lineage is None:
        return None
    try:
        start, end = int(lineage["start"]), int(lineage["end"])
        block = lineage.get("block")
        name = (_block_name(str(block[0]), str(block[1]), [str(v) for v in block[2]], end - start) if block
                else _range_name(lineage["file"], start, end))
        return name, [str(v) for v in lineage["variants"]], [str(e) for e in lineage["evaluators"]], \
            int(lineage["dropped"])
    except (KeyError, TypeError, ValueError, IndexError):
        return None  # not a lineage this version understands: the range is read


def _derive(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, piece: _Range, known: set[Any],
            table: str) -> bool:
    """``table`` := ``piece``'s verdicts from those of the range it was copied from, without the
    re-judged slice's rows; False (nothing created) when that Parquet is not in the store or
    the rows left out are not exactly as many as the writer left out."""
    if piece.parent is None:
        return False
    name, variants, evaluators, dropped = piece.parent
    parent = run_dir.cells_cache / name
    if name not in known or not parent.exists():
        return False
    in_slice = "coalesce(list_contains($variants, variant_name) AND list_contains($evaluators, evaluator), false)"
    try:
        (total, left_out), = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE {in_slice}) FROM read_parquet('{_literal(parent)}')",
            {"variants": variants, "evaluators": evaluators}).fetchall()
        if left_out != dropped:
            return False
        con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM read_parquet('{_literal(parent)}') WHERE NOT {in_slice}",
                    {"variants": variants, "evaluators": evaluators})
    except duckdb.Error:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        return False
    return True


def _read_range(con: duckdb.DuckDBPyConnection, run_dir: RunDirectory, piece: _Range, table: str) -> None:
    """``table`` := ``piece``'s lines of results.jsonl (RESULT_COLUMNS; a copy of the range is
    read, the whole file in place)."""
    source = run_dir.results
    size = source.stat().st_size
    copy: Path | None = None
    try:
        if (piece.start, piece.end) != (0, size):
            copy = run_dir.temp_file("cells")
            with source.open("rb") as src, copy.open("wb") as out:
                copy_range(src, out, piece.start, piece.end)
            source = copy
        load_table(con, table, source, RESULT_COLUMNS, str(run_dir.results))
    finally:
        if copy is not None:
            copy.unlink(missing_ok=True)


def _save(con: duckdb.DuckDBPyConnection, table: str, path: Path, run_dir: RunDirectory) -> bool:
    """Write ``table`` to ``path`` atomically; False when it cannot be written (then the store
    is not saved, and the queries read the JSONL)."""
    tmp = run_dir.temp_file("cells")
    try:
        con.execute(f"COPY {table} TO '{_literal(tmp)}' (FORMAT parquet)")
        os.replace(tmp, path)
    except (OSError, duckdb.Error):
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def _write_manifest(store: Store) -> None:
    """Save which Parquet files describe the run's files now, and remove every other file of the store."""
    folder = store.run_dir.cells_cache
    tmp = store.run_dir.temp_file("cells")
    traces_id, results_id = store.identities
    try:
        tmp.write_text(json.dumps({"format": _FORMAT_KEY, "traces": traces_id, "results": results_id,
                                   "traces_part": store.traces_part, "result_parts": store.result_parts,
                                   "evaluators": store.evaluators, "memo": store.memo, "cases": store.cases}),
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
