"""Replacing a slice of results.jsonl: the lines of some variants (and evaluators) at once.

The new lines come from part files judged elsewhere; the old lines outside the slice are
kept in order, and the whole file is swapped in by one rename under the run's lock.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.records import RESULTS
from evalh_pipeline.store.result_slices import (
    Block,
    Gap,
    Judgement,
    Slice,
    new_block_id,
    record_slices,
    recorded_blocks,
    recorded_slices,
    file_identity,
)
from evalh_pipeline.store.run_dir import RunDirectory

# How much of results.jsonl is read and filtered at a time.
CHUNK_BYTES = 1 << 23
# A part file of new results and the evaluator whose lines it holds (None: every evaluator's,
# trace by trace). Parts of one evaluator end up side by side in results.jsonl (a block), so
# a later re-judging of that evaluator drops a range instead of scattered lines.
Part = tuple[str | None, Path]


@dataclass
class KeptLines:
    """The old lines of results.jsonl outside a re-judged slice, copied to ``path`` (None: the
    manifest says no old line survives, nothing was read), their slices, and the evaluator
    blocks among them (offsets in ``path``), and where the lines between them came from (gaps)."""

    path: Path | None
    slices: set[Slice] = field(default_factory=set)
    blocks: list[Block] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)


def copy_kept_results(run_dir: RunDirectory, variants: set[str], evaluators: set[str] | None) -> KeptLines:
    """Copy the lines of results.jsonl outside the slice (``variants`` x ``evaluators``, None:
    every evaluator) to a temp file, for :func:`replace_results`. Judging never reads
    results.jsonl, so re-evaluation runs this while it judges (runner/evaluation.py).

    Where the manifest knows evaluator blocks (ranges of one evaluator's lines, as a full
    judging writes them), a block of the slice is skipped and any other block is copied as
    a range (``copy_file_range``: in the kernel, never read here); only the lines outside
    blocks are read and filtered.
    """
    with locked(run_dir.lock):
        old = recorded_slices(run_dir)
        if old is not None and all(v in variants and (evaluators is None or e in evaluators) for v, e in old):
            return KeptLines(None)  # every old line is re-judged: nothing to read
        merged_path = run_dir.temp_file("results.merge")
        try:
            with merged_path.open("wb", buffering=1 << 20) as merged:
                blocks = _usable_blocks(run_dir) if old is not None and evaluators is not None else []
                gaps: list[Gap] = []
                lineage = _Lineage(file_identity(run_dir.results), variants, evaluators)
                if old is not None and evaluators is not None and blocks:
                    kept_blocks = _copy_by_blocks(run_dir.results, merged, variants, evaluators, blocks, lineage, gaps)
                    return KeptLines(merged_path, _outside(old, variants, evaluators), kept_blocks, gaps)
                kept_slices = _copy_outside_slice(run_dir.results, merged, variants, evaluators, old, lineage, gaps)
                return KeptLines(merged_path, kept_slices, gaps=gaps)
        except BaseException:
            merged_path.unlink(missing_ok=True)
            raise


def replace_results(
    run_dir: RunDirectory, new: Path | Sequence[Path | Part], variants: set[str], evaluators: set[str] | None,
    new_slices: set[Slice] | None = None, judged: dict[Slice, Judgement] | None = None,
    kept: KeptLines | None = None,
) -> None:
    """results.jsonl := (old lines outside the re-judged slice) + new lines (``new``, in order), atomically.

    ``new`` are part files, each labelled with the evaluator whose lines it holds (a bare path:
    every evaluator's); side-by-side parts of one evaluator are recorded as its block.
    ``new_slices`` are the (variant, evaluator) pairs of the new lines, recorded so the next
    replacement can skip reading old lines that are all in its slice (None: not known);
    ``judged`` says how each slice was judged (store/result_slices.py). ``kept`` is the
    result of :func:`copy_kept_results` for the same slice when the caller made it already
    (the run's lock held since); its file is consumed.
    """
    parts: list[Part] = [(None, new)] if isinstance(new, Path) else [
        (None, p) if isinstance(p, Path) else p for p in new]
    with locked(run_dir.lock):
        kept = kept if kept is not None else copy_kept_results(run_dir, variants, evaluators)
        try:
            blocks: list[Block] = []
            gaps: list[Gap] = []
            segments: list[tuple[str | None, int, int]] = []  # (label, start, end) of the new lines
            if kept.slices or not parts:
                target = kept.path
                if target is None:
                    target = run_dir.temp_file("results.merge")
                    target.touch()
                blocks, gaps = list(kept.blocks), list(kept.gaps)
            else:
                # Nothing old survives: the first part becomes the file, no copy of it.
                label, target = parts[0]
                parts = parts[1:]
                segments.append((label, 0, target.stat().st_size))
                if kept.path is not None:
                    kept.path.unlink()
            offset = target.stat().st_size
            # Not "ab": copy_file_range refuses a file opened for appending.
            with target.open("r+b") as out:
                out.seek(0, os.SEEK_END)
                for label, part in parts:
                    size = part.stat().st_size
                    with part.open("rb") as fresh:
                        copy_range(fresh, out, 0, size)  # in the kernel where it can
                    segments.append((label, offset, offset + size))
                    offset += size
            blocks += _blocks_of(segments, variants)
            old = _hold(run_dir.results)
            try:
                os.replace(target, run_dir.results)
            except BaseException:
                if old is not None:
                    os.close(old)
                raise
            if old is not None:
                _release_later(old)
            record_slices(run_dir, None if new_slices is None else kept.slices | new_slices, judged, blocks, gaps)
        except BaseException:
            if kept.path is not None:
                kept.path.unlink(missing_ok=True)
            raise


# Replacing results.jsonl frees the old file, hundreds of megabytes after a re-judging
# (0.06-0.12 s of kernel work for 270 MB on ext4): with a descriptor of it held across the
# rename, that work happens when the descriptor is closed, in a thread, beside whatever the
# caller does next (the summary). The old file has no name by then, so nothing is left
# behind; were the process to die first, the kernel frees it with the process.
_releasing: list[threading.Thread] = []


def _hold(path: Path) -> int | None:
    """A read-only descriptor of ``path`` (None: no such file, or not a POSIX system, where
    renaming over an open file may fail)."""
    if os.name != "posix":
        return None
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


def _release_later(fd: int) -> None:
    thread = threading.Thread(target=os.close, args=(fd,), name="evalh-release-results", daemon=True)
    thread.start()
    _releasing.append(thread)


def settle_releases() -> None:
    """Wait until the results files replaced so far are freed: before forking (a process
    forked with another thread running is unsafe) and at the end of a stage, so that no
    thread of this module outlives it."""
    while _releasing:
        _releasing.pop().join()


def _blocks_of(segments: list[tuple[str | None, int, int]], variants: set[str]) -> list[Block]:
    """Side-by-side segments of one evaluator's lines, merged into blocks."""
    blocks: list[Block] = []
    for label, start, end in segments:
        if label is None or start == end:
            continue
        if blocks and blocks[-1][0] == label and blocks[-1][3] == start:
            blocks[-1] = (label, blocks[-1][1], blocks[-1][2], end, blocks[-1][4])
        else:
            blocks.append((label, tuple(sorted(variants)), start, end, new_block_id()))
    return blocks


def _usable_blocks(run_dir: RunDirectory) -> list[Block]:
    """The recorded blocks in file order, if they fit the file (else none: lines are filtered)."""
    blocks = sorted(recorded_blocks(run_dir), key=lambda b: b[2])
    size = run_dir.results.stat().st_size if run_dir.results.exists() else 0
    position = 0
    for _, _, start, end, _ in blocks:
        if start < position or end < start or end > size:
            return []
        position = end
    return blocks


def _outside(known: set[Slice], variants: set[str], evaluators: set[str] | None) -> set[Slice]:
    return {(v, e) for v, e in known if not (v in variants and (evaluators is None or e in evaluators))}


@dataclass(frozen=True)
class _Lineage:
    """What the lines kept from the old results.jsonl are: its lines (the file is named by its
    identity) without those of the re-judged slice."""

    file: list[int] | None
    variants: set[str]
    evaluators: set[str] | None

    def gap(self, gaps: list[Gap], at: int, written: int, dropped: int, start: int, end: int,
            block: Block | None = None) -> None:
        """Record that ``written`` bytes at ``at`` of the new file are bytes [start, end) of the
        old one (``block``: an evaluator block there) without ``dropped`` lines of the slice."""
        if written == 0 or self.file is None or self.evaluators is None:
            return
        parent = None if block is None or not block[4] else [block[4], block[0], list(block[1])]
        gaps.append((at, at + written, {
            "file": self.file, "start": start, "end": end, "block": parent, "dropped": dropped,
            "variants": sorted(self.variants), "evaluators": sorted(self.evaluators)}))


def _copy_by_blocks(path: Path, out: Any, variants: set[str], evaluators: set[str], blocks: list[Block],
                    lineage: _Lineage, gaps: list[Gap]) -> list[Block]:
    """Copy ``path`` without the slice's lines to ``out`` using its evaluator ``blocks``; the
    blocks copied whole, at their offsets in ``out`` (the lines between them: ``gaps``)."""
    in_slice = RESULTS.lines_where({"variant_name": variants, "evaluator": evaluators})
    needles = _needles(evaluators)
    kept: list[Block] = []
    written = 0
    with path.open("rb") as source:
        size = os.fstat(source.fileno()).st_size
        position = 0
        for block in blocks:
            evaluator, block_variants, start, end, block_id = block
            count, dropped = _filter_range(source, position, start, out, in_slice, needles)
            lineage.gap(gaps, written, count, dropped, position, start)
            written += count
            if evaluator in evaluators and set(block_variants) <= variants:
                pass  # every line of the block is re-judged: skipped, never read
            elif evaluator in evaluators:
                count, dropped = _filter_range(source, start, end, out, in_slice, needles)  # partly re-judged
                lineage.gap(gaps, written, count, dropped, start, end, block)
                written += count
            else:
                copy_range(source, out, start, end)
                kept.append((evaluator, block_variants, written, written + end - start, block_id))
                written += end - start
            position = end
        count, dropped = _filter_range(source, position, size, out, in_slice, needles)
        lineage.gap(gaps, written, count, dropped, position, size)
    return kept


def _needles(evaluators: set[str]) -> list[bytes]:
    # The evaluator key as the writer lays it out (result_lines.py), for finding candidates.
    return [b',"evaluator":' + to_json(name) + b',"evaluator_type":' for name in sorted(evaluators)]


def _filter_range(source: Any, start: int, end: int, out: Any, in_slice: re.Pattern[bytes],
                  needles: list[bytes]) -> tuple[int, int]:
    """Copy the lines of ``source``'s bytes [start, end) (whole lines) outside the slice; the
    bytes written and the lines of the slice left out."""
    written = dropped = 0
    for block in _line_blocks(source, start, end):
        more, less = _write_outside(block, in_slice, needles, out)
        written, dropped = written + more, dropped + less
    return written, dropped


def _line_blocks(source: Any, start: int = 0, end: int | None = None) -> Iterator[bytes]:
    """``source``'s bytes [start, end) (to its end without ``end``) a chunk at a time, each as
    ``\n`` + whole lines; a torn last line is left out, as readers do."""
    source.seek(start)
    remaining = end - start if end is not None else None
    pending = b""
    while remaining is None or remaining > 0:
        chunk = source.read(CHUNK_BYTES if remaining is None else min(CHUNK_BYTES, remaining))
        if not chunk:
            return
        if remaining is not None:
            remaining -= len(chunk)
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:
            pending += chunk
            continue
        # One copy of the block (a copy per step was a tenth of a second per 200 MB).
        yield b"".join((b"\n", pending, memoryview(chunk)[:cut]))
        pending = chunk[cut:]


def _write_outside(block: bytes, in_slice: re.Pattern[bytes], needles: list[bytes], out: Any) -> tuple[int, int]:
    """Write the lines of ``block`` outside the slice; the bytes written and the lines left out."""
    runs = _runs_outside(block, in_slice, needles)
    out.writelines(runs)
    return sum(len(run) for run in runs), len(runs) - 1


def copy_range(source: Any, out: Any, start: int, end: int) -> None:
    """Append ``source``'s bytes [start, end) to ``out``: in the kernel where it can, else read and written."""
    out.flush()  # what was written through the buffer goes first
    offset, remaining = start, end - start
    try:
        while remaining > 0:
            copied = os.copy_file_range(source.fileno(), out.fileno(), remaining, offset)
            if copied == 0:
                raise OSError(f"{source.name}: ended before byte {end}")
            offset += copied
            remaining -= copied
        return
    except (AttributeError, OSError) as exc:
        if remaining != end - start and not isinstance(exc, AttributeError):
            raise  # part of the range went out already: never continue from a guess
    source.seek(start)
    while remaining > 0:
        chunk = source.read(min(CHUNK_BYTES, remaining))
        if not chunk:
            raise OSError(f"{source.name}: ended before byte {end}")
        out.write(chunk)
        remaining -= len(chunk)


def _copy_outside_slice(path: Path, out: Any, variants: set[str], evaluators: set[str] | None,
                        known: set[Slice] | None = None, lineage: _Lineage | None = None,
                        gaps: list[Gap] | None = None) -> set[Slice]:
    """Copy the complete lines of ``path`` that are not in the slice to ``out``; their slices.

    A regex drops the lines in the slice chunk by chunk (a per-line Python loop was half a
    second per 500,000 results); what it leaves — lines of other slices, other layouts,
    blank lines — is checked line by line. A torn last line is dropped, as readers do.
    With ``known`` (the file's slices, from a manifest that matches it: the file is ours,
    every line in the codec's layout, which the regex matches), what the regex leaves is
    copied as it is: an incremental re-evaluation keeps most lines, and checking each one
    cost more than judging. Then what was copied is also recorded in ``gaps`` (``lineage``).
    """
    kept: set[Slice] = set()
    if not path.exists():
        return kept
    in_slice = RESULTS.lines_where({"variant_name": variants, "evaluator": evaluators})
    needles = _needles(evaluators) if known is not None and evaluators is not None else None
    written = dropped = size = 0
    with path.open("rb") as handle:
        for block in _line_blocks(handle):
            if needles is not None:
                more, less = _write_outside(block, in_slice, needles, out)
                written, dropped = written + more, dropped + less
                continue
            # Each match takes a line with the newline before it, so the rest stays whole lines.
            rest = in_slice.sub(b"", block)
            if known is not None:
                out.write(memoryview(rest)[1:])
                continue
            for raw in rest[1:].split(b"\n")[:-1]:
                if not raw.strip():
                    continue
                variant, evaluator = RESULTS.read_fields(raw, "variant_name", "evaluator")
                if not (variant in variants and (evaluators is None or evaluator in evaluators)):
                    out.write(raw + b"\n")
                    kept.add((variant, evaluator))
        size = handle.tell()
    if needles is not None and lineage is not None and gaps is not None:
        lineage.gap(gaps, 0, written, dropped, 0, size)
    if known is not None:
        kept = _outside(known, variants, evaluators)
    return kept


def _runs_outside(block: bytes, in_slice: re.Pattern[bytes], needles: list[bytes]) -> list[memoryview]:
    """The runs of ``block`` (``\n`` + whole lines) outside the slice, without the leading ``\n``.

    The evaluator names are found with ``bytes.find`` (a scan at memory speed) and each
    candidate line is confirmed by the slice pattern anchored at its start; a regex tried
    at every line start cost a third of a second per 500,000 results.
    """
    starts = set()
    for needle in needles:
        at = block.find(needle)
        while at != -1:
            starts.add(block.rfind(b"\n", 0, at))
            at = block.find(needle, at + len(needle))
    view = memoryview(block)
    runs = []
    position = 1
    for start in sorted(starts):
        match = in_slice.match(block, start)
        if match is None or start + 1 < position:
            continue  # not a line of the slice after all (e.g. the name inside a detail)
        runs.append(view[position:start + 1])
        position = match.end() + 1
    runs.append(view[position:])
    return runs
