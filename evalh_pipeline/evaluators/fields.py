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
        node = root
        for part in self.parts:
            node = _step(node, part)
            if node is _MISSING:
                return default
        return node

    def exists(self, root: Any) -> bool:
        return self.get(root, _MISSING) is not _MISSING


def _step(node: Any, part: str | int) -> Any:
    if isinstance(part, int):
        return node[part] if isinstance(node, list) and -len(node) <= part < len(node) else _MISSING
    if isinstance(node, dict):
        return node.get(part, _MISSING)
    if isinstance(node, BaseModel):
        # Fields and extra keys are both attributes; methods (model_dump, ...) are not data.
        value = getattr(node, part, _MISSING)
        return _MISSING if callable(value) and not isinstance(value, BaseModel) else value
    return _MISSING


def as_text(value: Any) -> str:
    """Text form of a field for matching: None is empty, everything else str()."""
    return "" if value is None else value if isinstance(value, str) else str(value)


def check_field_path(value: str | None) -> str | None:
    """Pydantic validator body: a field path must parse (so errors surface when the eval loads)."""
    if value is not None:
        FieldPath(value)
    return value
