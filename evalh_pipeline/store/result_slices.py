"""Which (variant, evaluator) slices ``results.jsonl`` holds, remembered beside it.

Replacing a slice has to drop the old lines of that slice and keep the rest, which means
reading the whole file (a quarter of a gigabyte at 500,000 results). When the manifest
says every old line belongs to the slice being replaced, that read is skipped. The
manifest names the exact file it describes (inode, size, mtime in ns); any other writer
of results.jsonl changes those, and a stale manifest is simply ignored.

It also records, per slice, how it was judged: the evaluator's config hash and the traces
file it judged (inode and size). Re-evaluation then re-judges only slices whose evaluator
changed, and only the traces appended since for the others (runner/evaluation.py).
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh_pipeline.store.run_dir import RunDirectory

Slice = tuple[str, str]


@dataclass(frozen=True)
class Judgement:
    """How one slice was judged: the evaluator's config hash, and the traces file it read
    (inode, and the size it had: every trace line before that offset was judged)."""

    evaluator_hash: str
    traces_inode: int
    traces_size: int
    results: int = 0  # result lines of the slice


def file_identity(path: Path) -> list[int] | None:
    """[inode, size, mtime in ns] of a run file, as manifests record it (None: no such file):
    a file appended to, rewritten or replaced by rename reads as another."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns]


def _manifest(run_dir: RunDirectory) -> dict[str, Any] | None:
    """The manifest when it describes the run's current results file, else None."""
    try:
        data = json.loads(run_dir.results_slices.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("file") != file_identity(run_dir.results):
        return None
    return data


def recorded_slices(run_dir: RunDirectory) -> set[Slice] | None:
    """The slices of the run's results as recorded, or None when unknown (no manifest, or a stale one)."""
    data = _manifest(run_dir)
    if data is None:
        return None
    return {(variant, evaluator) for variant, evaluator in data["slices"]}


def recorded_judgements(run_dir: RunDirectory) -> dict[Slice, Judgement] | None:
    """Slice -> how it was judged, as recorded (None when the manifest is missing or stale;
    a slice without a record is absent)."""
    data = _manifest(run_dir)
    if data is None:
        return None
    judged = {}
    for variant, evaluator, digest, inode, size, count in data.get("judged", []):
        judged[(variant, evaluator)] = Judgement(digest, inode, size, count)
    return judged


# A range of results.jsonl holding only ``evaluator``'s lines of ``variants`` (and all of
# them for those variants): [evaluator, [variants], start, end, id]. The id is given when
# the block's lines are written and kept while they are copied byte for byte, so a cache
# derived from a block's lines (queries/cell_store.py) stays valid across rewrites of the
# file that keep the block ("": a block recorded before ids were).
Block = tuple[str, tuple[str, ...], int, int, str]


def new_block_id() -> str:
    """A fresh block id (random: two blocks never share one, whatever wrote them)."""
    return secrets.token_hex(12)


def recorded_blocks(run_dir: RunDirectory) -> list[Block]:
    """The evaluator blocks of the run's results as recorded (none when unknown)."""
    data = _manifest(run_dir)
    if data is None:
        return []
    return [(row[0], tuple(row[1]), row[2], row[3], row[4] if len(row) > 4 else "") for row in data.get("blocks", [])]


# A range of results.jsonl outside its blocks whose lines are those of a range of the file
# it was rewritten from, without the lines of the slice re-judged then (results_file.py):
# [start, end, {"file": that file's identity, "start", "end": the range there, "block":
# [id, evaluator, [variants]] when that range was a block (else None), "variants",
# "evaluators": the slice, "dropped": how many of its lines were left out}]. A cache derived
# from the old range (queries/cell_store.py) is then derived for the new one too.
Gap = tuple[int, int, dict[str, Any]]


def recorded_gaps(run_dir: RunDirectory) -> list[Gap]:
    """The gaps of the run's results as recorded (none when unknown)."""
    data = _manifest(run_dir)
    if data is None:
        return []
    try:
        return [(int(start), int(end), dict(lineage)) for start, end, lineage in data.get("gaps", [])]
    except (TypeError, ValueError):
        return []  # not in the shape this version writes: no lineage, the ranges are read


def traces_identity(traces: Path) -> tuple[int, int] | None:
    """(inode, size) of the traces file: appended to, the inode stays; rewritten, it changes."""
    try:
        stat = traces.stat()
    except FileNotFoundError:
        return None
    return (stat.st_ino, stat.st_size)


def record_slices(run_dir: RunDirectory, slices: set[Slice] | None,
                  judged: dict[Slice, Judgement] | None = None, blocks: list[Block] | None = None,
                  gaps: list[Gap] | None = None) -> None:
    """Remember the slices the run's results now hold (``None``: forget, they are unknown),
    how each was judged (slices missing from ``judged`` are re-judged in full next time), its
    evaluator blocks (ranges of one evaluator's lines) and the lineage of the lines between
    them (gaps)."""
    manifest = run_dir.results_slices
    identity = file_identity(run_dir.results)
    if slices is None or identity is None:
        manifest.unlink(missing_ok=True)
        return
    rows = sorted([v, e, j.evaluator_hash, j.traces_inode, j.traces_size, j.results]
                  for (v, e), j in (judged or {}).items() if (v, e) in slices)
    tmp = run_dir.temp_file("results.slices")
    tmp.write_text(json.dumps({"file": identity, "slices": sorted(slices), "judged": rows,
                               "blocks": [[e, list(vs), start, end, block_id]
                                          for e, vs, start, end, block_id in blocks or []],
                               "gaps": [[start, end, lineage] for start, end, lineage in gaps or []]}),
                   encoding="utf-8")
    os.replace(tmp, manifest)
