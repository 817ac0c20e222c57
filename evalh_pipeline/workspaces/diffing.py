"""Diff two manifests by (path, hash) and render unified diffs of the text files.

Bodies are capped: a file above ``max_file_bytes`` gets no body, a body above
``max_diff_bytes`` is cut, and the whole diff stops growing at ``max_total_bytes``.
Every cap that was hit is recorded by path in :class:`DiffNotes`, so evaluators can
tell "no change shown" from "not computed".
"""

from __future__ import annotations

import difflib
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from evalh_pipeline.models import FileDiff, FileManifest

ReadBytes = Callable[[str], "bytes | None"]

_BINARY_SNIFF = 8192


@dataclass(frozen=True)
class DiffLimits:
    """Caps on diff bodies (bytes)."""

    max_file_bytes: int = 2_000_000
    max_diff_bytes: int = 256_000
    max_total_bytes: int = 4_000_000


@dataclass
class DiffNotes:
    """What the text diff left out and why; stored in the artifact beside the diff."""

    binary: list[str] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    too_large: list[str] = field(default_factory=list)
    skipped_total_cap: list[str] = field(default_factory=list)


def compare_manifests(before: FileManifest, after: FileManifest) -> tuple[list[str], list[str], list[str]]:
    """(added, removed, modified) paths, sorted; a mode change alone counts as modified."""
    old, new = before.files, after.files
    added = sorted(k for k in new if k not in old)
    removed = sorted(k for k in old if k not in new)
    modified = sorted(
        k for k in new
        if k in old and (new[k].sha256 != old[k].sha256 or new[k].mode != old[k].mode or not new[k].sha256)
    )
    return added, removed, modified


def is_binary(data: bytes) -> bool:
    """NUL bytes near the start, or not UTF-8: treated as binary (no text body)."""
    if b"\0" in data[:_BINARY_SNIFF]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def unified_text_diff(key: str, old: bytes | None, new: bytes | None) -> str:
    """A git-style unified diff of one file (``None`` means absent: /dev/null)."""
    old_lines = old.decode("utf-8").splitlines(keepends=True) if old is not None else []
    new_lines = new.decode("utf-8").splitlines(keepends=True) if new is not None else []
    lines = difflib.unified_diff(
        old_lines, new_lines,
        fromfile=f"a/{key}" if old is not None else "/dev/null",
        tofile=f"b/{key}" if new is not None else "/dev/null",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def build_file_diff(
    before: FileManifest, after: FileManifest, read_before: ReadBytes, read_after: ReadBytes,
    limits: DiffLimits = DiffLimits(),
) -> tuple[FileDiff, DiffNotes]:
    """The FileDiff of two manifests, with text bodies for changed regular text files."""
    added, removed, modified = compare_manifests(before, after)
    notes = DiffNotes()
    bodies: dict[str, str] = {}
    budget = limits.max_total_bytes
    for key in sorted({*added, *removed, *modified}):
        old_entry, new_entry = before.files.get(key), after.files.get(key)
        if any(e is not None and not stat.S_ISREG(e.mode) for e in (old_entry, new_entry)):
            continue  # links and special files: the manifest says it all
        if any(e is not None and e.size > limits.max_file_bytes for e in (old_entry, new_entry)):
            notes.too_large.append(key)
            continue
        if budget <= 0:
            notes.skipped_total_cap.append(key)
            continue
        old = read_before(key) if old_entry is not None else None
        new = read_after(key) if new_entry is not None else None
        if (old_entry is not None and old is None) or (new_entry is not None and new is None):
            notes.binary.append(key)  # unreadable: reported without a body
            continue
        if any(data is not None and is_binary(data) for data in (old, new)):
            notes.binary.append(key)
            continue
        body = unified_text_diff(key, old, new)
        if len(body) > limits.max_diff_bytes:
            body = body[: limits.max_diff_bytes] + "\n[diff truncated by evalh]\n"
            notes.truncated.append(key)
        budget -= len(body)
        if body:
            bodies[key] = body
    return FileDiff(added=added, removed=removed, modified=modified, text_diffs=bodies), notes


def render_diff_text(diff: FileDiff, notes: DiffNotes) -> str:
    """diff.txt: the text bodies in path order plus one line per file without a body."""
    parts = []
    for key in sorted({*diff.added, *diff.removed, *diff.modified}):
        body = diff.text_diffs.get(key)
        if body:
            parts.append(body)
        elif key in notes.binary:
            parts.append(f"Binary files a/{key} and b/{key} differ\n")
        elif key in notes.too_large:
            parts.append(f"File {key} changed (too large for a text diff)\n")
        elif key in notes.skipped_total_cap:
            parts.append(f"File {key} changed (diff size cap reached)\n")
        else:
            parts.append(f"File {key} changed (link, mode or special file)\n")
    return "".join(parts)
