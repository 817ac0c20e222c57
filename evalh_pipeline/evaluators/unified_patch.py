"""Parse a unified diff (git or plain ``diff -u``) and apply it to a file's lines.

Used by ``git_diff`` to check an expected patch semantically: the run passes when its
after-version equals the before-version with the patch applied, whatever diff tool or
context size produced the patch text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evalh_pipeline.errors import CellError

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
DEV_NULL = "/dev/null"


class PatchError(CellError, ValueError):
    """The patch text is malformed, or does not apply to the before-version."""


@dataclass
class Hunk:
    old_start: int
    old_lines: list[str] = field(default_factory=list)  # context + removed, in order
    new_lines: list[str] = field(default_factory=list)  # context + added, in order


@dataclass
class FilePatch:
    path: str
    created: bool = False
    deleted: bool = False
    hunks: list[Hunk] = field(default_factory=list)


def parse_patch(text: str) -> list[FilePatch]:
    """The files of a unified diff, in order; a malformed hunk raises :class:`PatchError`."""
    files: list[FilePatch] = []
    old_path: str | None = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old_path, new_path = _header_path(line[4:]), _header_path(lines[i + 1][4:])
            old_path, new_path = _strip_git_prefixes(old_path, new_path)
            files.append(FilePatch(
                path=old_path if new_path == DEV_NULL else new_path,
                created=old_path == DEV_NULL, deleted=new_path == DEV_NULL,
            ))
            i += 2
            continue
        match = _HUNK.match(line)
        if match:
            if not files:
                raise PatchError(f"hunk before any '---'/'+++' file header (line {i + 1})")
            i = _read_hunk(lines, i, match, files[-1])
            continue
        i += 1  # diff --git, index, mode lines and prose around the patch
    if not files:
        raise PatchError("no file header ('--- a/path' / '+++ b/path') in the patch")
    return files


def apply_file_patch(patch: FilePatch, before: list[str] | None) -> list[str] | None:
    """The lines after applying ``patch`` to ``before`` (None: the file is absent)."""
    if patch.created and before is not None:
        raise PatchError(f"{patch.path}: the patch creates the file but it existed before the run")
    if not patch.created and before is None:
        raise PatchError(f"{patch.path}: the patch changes the file but it did not exist before the run")
    result = list(before or [])
    offset = 0
    for hunk in patch.hunks:
        # -N,0 inserts after line N; otherwise line N is the hunk's first old line.
        wanted = hunk.old_start + offset - (1 if hunk.old_lines else 0)
        position = _find(result, hunk.old_lines, max(wanted, 0))
        if position is None:
            shown = hunk.old_lines[0] if hunk.old_lines else ""
            raise PatchError(f"{patch.path}: hunk at line {hunk.old_start} does not apply "
                             f"(its lines starting {shown!r} are not in the before-version)")
        result[position:position + len(hunk.old_lines)] = hunk.new_lines
        offset += len(hunk.new_lines) - len(hunk.old_lines) + (position - wanted)
    return None if patch.deleted else result


def _read_hunk(lines: list[str], i: int, match: re.Match[str], target: FilePatch) -> int:
    old_left = int(match.group(2)) if match.group(2) is not None else 1
    new_left = int(match.group(4)) if match.group(4) is not None else 1
    hunk = Hunk(old_start=int(match.group(1)))
    i += 1
    while old_left > 0 or new_left > 0:
        if i >= len(lines):
            raise PatchError(f"{target.path}: hunk at line {hunk.old_start} ends early")
        line = lines[i]
        tag, body = line[:1], line[1:]
        if tag == "\\":  # "\ No newline at end of file"
            i += 1
            continue
        if tag in (" ", "") and old_left > 0 and new_left > 0:
            hunk.old_lines.append(body)
            hunk.new_lines.append(body)
            old_left, new_left = old_left - 1, new_left - 1
        elif tag == "-" and old_left > 0:
            hunk.old_lines.append(body)
            old_left -= 1
        elif tag == "+" and new_left > 0:
            hunk.new_lines.append(body)
            new_left -= 1
        else:
            raise PatchError(f"{target.path}: unexpected line {line!r} in the hunk at line {hunk.old_start}")
        i += 1
    target.hunks.append(hunk)
    return i


def _find(lines: list[str], block: list[str], near: int) -> int | None:
    """Where ``block`` occurs in ``lines`` (line ends ignored), searching outward from ``near``."""
    if not block:
        return min(near, len(lines))
    wanted = [b.rstrip() for b in block]
    last = len(lines) - len(block)
    for distance in range(max(last + 1, 1) + abs(near)):
        for candidate in (near - distance, near + distance) if distance else (near,):
            if 0 <= candidate <= last and [ln.rstrip() for ln in lines[candidate:candidate + len(block)]] == wanted:
                return candidate
    return None


def _header_path(text: str) -> str:
    # `--- a/path<TAB>2026-01-01 ...`: diff -u appends a timestamp after a tab.
    path = text.split("\t", 1)[0].strip()
    return path[1:-1] if len(path) > 1 and path[0] == path[-1] == '"' else path


def _strip_git_prefixes(old: str, new: str) -> tuple[str, str]:
    """Drop git's ``a/`` and ``b/`` prefixes when the header uses them."""
    old_git = old == DEV_NULL or old.startswith("a/")
    new_git = new == DEV_NULL or new.startswith("b/")
    if old_git and new_git and not (old == DEV_NULL and new == DEV_NULL):
        old = old if old == DEV_NULL else old[2:]
        new = new if new == DEV_NULL else new[2:]
    return old, new
