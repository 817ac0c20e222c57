"""Replacing a slice of results.jsonl: the lines of some variants (and evaluators) at once.

The new lines come from part files judged elsewhere; the old lines outside the slice are
kept in order, and the whole file is swapped in by one rename under the run's lock.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.records import RESULTS
from evalh_pipeline.store.result_slices import Judgement, Slice, record_slices, recorded_slices
from evalh_pipeline.store.run_dir import RunDirectory

# How much of results.jsonl is read and filtered at a time.
CHUNK_BYTES = 1 << 23


@dataclass
class KeptLines:
    """The old lines of results.jsonl outside a re-judged slice, copied to ``path`` (None: the
    manifest says no old line survives, nothing was read), and their slices."""

    path: Path | None
    slices: set[Slice] = field(default_factory=set)


def copy_kept_results(run_dir: RunDirectory, variants: set[str], evaluators: set[str] | None) -> KeptLines:
    """Copy the lines of results.jsonl outside the slice (``variants`` x ``evaluators``, None:
    every evaluator) to a temp file, for :func:`replace_results`. Judging never reads
    results.jsonl, so re-evaluation runs this while it judges (runner/evaluation.py)."""
    with locked(run_dir.lock):
        old = recorded_slices(run_dir)
        if old is not None and all(v in variants and (evaluators is None or e in evaluators) for v, e in old):
            return KeptLines(None)  # every old line is re-judged: nothing to read
        merged_path = run_dir.temp_file("results.merge")
        try:
            with merged_path.open("wb", buffering=1 << 20) as merged:
                return KeptLines(merged_path, _copy_outside_slice(run_dir.results, merged, variants, evaluators, old))
        except BaseException:
            merged_path.unlink(missing_ok=True)
            raise


def replace_results(
    run_dir: RunDirectory, new: Path | Sequence[Path], variants: set[str], evaluators: set[str] | None,
    new_slices: set[Slice] | None = None, judged: dict[Slice, Judgement] | None = None,
    kept: KeptLines | None = None,
) -> None:
    """results.jsonl := (old lines outside the re-judged slice) + new lines (``new``, in order), atomically.

    ``new_slices`` are the (variant, evaluator) pairs of the new lines, recorded so the next
    replacement can skip reading old lines that are all in its slice (None: not known);
    ``judged`` says how each slice was judged (store/result_slices.py). ``kept`` is the
    result of :func:`copy_kept_results` for the same slice when the caller made it already
    (the run's lock held since); its file is consumed.
    """
    parts = [new] if isinstance(new, Path) else list(new)
    with locked(run_dir.lock):
        kept = kept if kept is not None else copy_kept_results(run_dir, variants, evaluators)
        try:
            if kept.slices or not parts:
                target = kept.path
                if target is None:
                    target = run_dir.temp_file("results.merge")
                    target.touch()
            else:
                # Nothing old survives: the first part becomes the file, no copy of it.
                target = parts[0]
                parts = parts[1:]
                if kept.path is not None:
                    kept.path.unlink()
            with target.open("ab") as out:
                for part in parts:
                    with part.open("rb") as fresh:
                        shutil.copyfileobj(fresh, out, 1 << 22)
            os.replace(target, run_dir.results)
            record_slices(run_dir, None if new_slices is None else kept.slices | new_slices, judged)
        except BaseException:
            if kept.path is not None:
                kept.path.unlink(missing_ok=True)
            raise


def _copy_outside_slice(path: Path, out: Any, variants: set[str], evaluators: set[str] | None,
                        known: set[Slice] | None = None) -> set[Slice]:
    """Copy the complete lines of ``path`` that are not in the slice to ``out``; their slices.

    A regex drops the lines in the slice chunk by chunk (a per-line Python loop was half a
    second per 500,000 results); what it leaves — lines of other slices, other layouts,
    blank lines — is checked line by line. A torn last line is dropped, as readers do.
    With ``known`` (the file's slices, from a manifest that matches it: the file is ours,
    every line in the codec's layout, which the regex matches), what the regex leaves is
    copied as it is: an incremental re-evaluation keeps most lines, and checking each one
    cost more than judging.
    """
    kept: set[Slice] = set()
    if not path.exists():
        return kept
    in_slice = RESULTS.lines_where({"variant_name": variants, "evaluator": evaluators})
    # The evaluator key as the writer lays it out (result_lines.py), for finding candidates.
    needles = ([b',"evaluator":' + to_json(name) + b',"evaluator_type":' for name in sorted(evaluators)]
               if known is not None and evaluators is not None else None)
    pending = b""
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                pending += chunk
                continue
            # One copy of the block (a copy per step was a tenth of a second per 200 MB).
            block = b"".join((b"\n", pending, memoryview(chunk)[:cut]))
            pending = chunk[cut:]
            if needles is not None:
                out.writelines(_outside(block, in_slice, needles))
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
    if known is not None:
        kept = {(v, e) for v, e in known if not (v in variants and (evaluators is None or e in evaluators))}
    return kept


def _outside(block: bytes, in_slice: re.Pattern[bytes], needles: list[bytes]) -> list[memoryview]:
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
