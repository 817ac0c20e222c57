"""Read a field of a trace by path: ``output.final_answer``, ``$.tool_calls[0].name``."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

_MISSING = object()
_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


class FieldPath:
    """A parsed dotted path (JSONPath-style ``$.`` prefix accepted) into a model or dict."""

    def __init__(self, path: str) -> None:
        text = path.strip()
        text = text[2:] if text.startswith("$.") else text.lstrip("$")
        self.text = path
        self.parts: list[str | int] = [
            int(index) if index else name for name, index in _TOKEN.findall(text)
        ]
        if not self.parts:
            raise ValueError(f"empty field path {path!r}")

    def get(self, root: Any, default: Any = None) -> Any:
        """The value at this path, or ``default`` when any step is missing."""
        # One inline loop instead of a call per step: re-evaluation walks millions of paths.
        node = root
        for part in self.parts:
            if isinstance(part, int):
                if not (isinstance(node, list) and -len(node) <= part < len(node)):
                    return default
                node = node[part]
            elif isinstance(node, dict):
                node = node.get(part, _MISSING)
                if node is _MISSING:
                    return default
            elif isinstance(node, BaseModel):
                # Fields and extra keys are both attributes; methods (model_dump, ...) are not data.
                node = getattr(node, part, _MISSING)
                if node is _MISSING or (callable(node) and not isinstance(node, BaseModel)):
                    return default
            else:
                return default
        return node

    def exists(self, root: Any) -> bool:
        return self.get(root, _MISSING) is not _MISSING


def as_text(value: Any) -> str:
    """Text form of a field for matching: None is empty, everything else str()."""
    return "" if value is None else value if isinstance(value, str) else str(value)


def check_field_path(value: str | None) -> str | None:
    """Pydantic validator body: a field path must parse (so errors surface when the eval loads)."""
    if value is not None:
        FieldPath(value)
    return value
