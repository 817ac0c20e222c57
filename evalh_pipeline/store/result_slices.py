"""Which (variant, evaluator) slices ``results.jsonl`` holds, remembered beside it.

Replacing a slice has to drop the old lines of that slice and keep the rest, which means
reading the whole file (a quarter of a gigabyte at 500,000 results). When the manifest
says every old line belongs to the slice being replaced, that read is skipped. The
manifest names the exact file it describes (inode, size, mtime in ns); any other writer
of results.jsonl changes those, and a stale manifest is simply ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from evalh_pipeline.store.run_dir import RunDirectory

Slice = tuple[str, str]


def _identity(path: Path) -> list[int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns]


def recorded_slices(run_dir: RunDirectory) -> set[Slice] | None:
    """The slices of the run's results as recorded, or None when unknown (no manifest, or a stale one)."""
    results, manifest = run_dir.results, run_dir.results_slices
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("file") != _identity(results):
        return None
    return {(variant, evaluator) for variant, evaluator in data["slices"]}


def record_slices(run_dir: RunDirectory, slices: set[Slice] | None) -> None:
    """Remember the slices the run's results now hold (``None``: forget, they are unknown)."""
    manifest = run_dir.results_slices
    identity = _identity(run_dir.results)
    if slices is None or identity is None:
        manifest.unlink(missing_ok=True)
        return
    tmp = run_dir.temp_file("results.slices")
    tmp.write_text(json.dumps({"file": identity, "slices": sorted(slices)}), encoding="utf-8")
    os.replace(tmp, manifest)
