"""Replacing a slice of results.jsonl: the lines of some variants (and evaluators) at once.

The new lines come from part files judged elsewhere; the old lines outside the slice are
kept in order, and the whole file is swapped in by one rename under the run's lock.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.records import RESULTS
from evalh_pipeline.store.result_slices import Judgement, Slice, record_slices, recorded_slices
from evalh_pipeline.store.run_dir import RunDirectory


def replace_results(
    run_dir: RunDirectory, new: Path | Sequence[Path], variants: set[str], evaluators: set[str] | None,
    new_slices: set[Slice] | None = None, judged: dict[Slice, Judgement] | None = None,
) -> None:
    """results.jsonl := (old lines outside the re-judged slice) + new lines (``new``, in order), atomically.

    ``new_slices`` are the (variant, evaluator) pairs of the new lines, recorded so the next
    replacement can skip reading old lines that are all in its slice (None: not known);
    ``judged`` says how each slice was judged (store/result_slices.py).
    """
    parts = [new] if isinstance(new, Path) else list(new)
    with locked(run_dir.lock):
        merged_path = run_dir.temp_file("results.merge")
        try:
            old = recorded_slices(run_dir)
            if old is not None and all(v in variants and (evaluators is None or e in evaluators) for v, e in old):
                kept: set[Slice] = set()  # every old line is re-judged: nothing to read
            else:
                with merged_path.open("wb", buffering=1 << 20) as merged:
                    kept = _copy_outside_slice(run_dir.results, merged, variants, evaluators, old)
            if kept or not parts:
                target = merged_path
            else:
                # Nothing old survives: the first part becomes the file, no copy of it.
                target = parts[0]
                parts = parts[1:]
                merged_path.unlink()
            with target.open("ab") as out:
                for part in parts:
                    with part.open("rb") as fresh:
                        shutil.copyfileobj(fresh, out, 1 << 22)
            os.replace(target, run_dir.results)
            record_slices(run_dir, None if new_slices is None else kept | new_slices, judged)
        except BaseException:
            merged_path.unlink(missing_ok=True)
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
    pending = b""
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 23):
            data = pending + chunk
            cut = data.rfind(b"\n") + 1
            data, pending = data[:cut], data[cut:]
            # Each match takes a line with the newline before it, so the rest stays whole lines.
            rest = in_slice.sub(b"", b"\n" + data)[1:]
            if known is not None:
                out.write(rest)
                continue
            for raw in rest.split(b"\n")[:-1]:
                if not raw.strip():
                    continue
                variant, evaluator = RESULTS.read_fields(raw, "variant_name", "evaluator")
                if not (variant in variants and (evaluators is None or evaluator in evaluators)):
                    out.write(raw + b"\n")
                    kept.add((variant, evaluator))
    if known is not None:
        kept = {(v, e) for v, e in known if not (v in variants and (evaluators is None or e in evaluators))}
    return kept
