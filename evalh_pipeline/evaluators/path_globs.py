"""Path patterns of filesystem evaluators: workspace-relative globs with ``**``."""

from __future__ import annotations

import re
from collections.abc import Iterable


class PathGlob:
    """A glob over workspace-relative POSIX paths, anchored at the workspace root.

    ``*`` and ``?`` stay within one path segment, ``[...]`` is a character class
    (``[!...]`` negated), ``**`` as a whole segment spans any number of folders (also
    none). A pattern that matches a folder matches everything under it, so ``vendor``
    and ``vendor/**`` both cover ``vendor/lib/x.py``. Absolute patterns and ``..`` are
    refused: a pattern can only ever name something inside the workspace.
    """

    def __init__(self, pattern: str) -> None:
        text = pattern.strip()
        if not text:
            raise ValueError("empty path pattern")
        if text.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", text):
            raise ValueError(f"path pattern {pattern!r} is absolute; patterns are relative to the workspace root")
        parts = [p for p in text.rstrip("/").split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ValueError(f"path pattern {pattern!r} contains '..'; patterns stay inside the workspace")
        if not parts:
            raise ValueError(f"path pattern {pattern!r} names no path")
        self.pattern = pattern
        self._regex = re.compile(_translate(parts), re.DOTALL)

    def matches(self, path: str) -> bool:
        """Whether ``path`` or one of the folders it lies in matches."""
        segments = path.split("/")
        return any(self._regex.fullmatch("/".join(segments[:i])) for i in range(len(segments), 0, -1))

    def __repr__(self) -> str:
        return f"PathGlob({self.pattern!r})"


def compile_globs(patterns: Iterable[str]) -> list[PathGlob]:
    return [PathGlob(p) for p in patterns]


def check_globs(patterns: list[str] | None) -> list[str] | None:
    """Pydantic validator body: every pattern must compile (so errors surface when the eval loads)."""
    if patterns is not None:
        compile_globs(patterns)
    return patterns


def _translate(parts: list[str]) -> str:
    regex = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            regex += ".*" if last else "(?:[^/]+/)*"
        else:
            regex += _segment(part) + ("" if last else "/")
    return regex


def _segment(part: str) -> str:
    out, i = "", 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "[" and (end := part.find("]", i + 2 if part[i + 1:i + 2] in ("!", "^") else i + 1)) != -1:
            body = part[i + 1:end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out += "[" + ("^/" if negate else "") + body.replace("\\", "\\\\") + "]"
            i = end
        else:
            out += re.escape(ch)
        i += 1
    return out
