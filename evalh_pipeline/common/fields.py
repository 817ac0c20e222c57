"""Read a field of a trace by path: ``output.final_answer``, ``$.tool_calls[0].name``."""

from __future__ import annotations

import re
from typing import Any, overload

from pydantic import BaseModel

_MISSING = object()
_TOKEN = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")
# A plain dotted path with list indexes (`output.final_answer`, `$.tool_calls[0].name`): read
# by a fast walk. Anything else (`[*]`, `..`, filters, quoted names) goes to jsonpath-ng.
_SIMPLE = re.compile(r"(?:\$\.?)?[\w-]+(?:\.[\w-]+|\[-?\d+\])*")


class FieldPath:
    """A path into a model or dict: a dotted path, or any JSONPath (jsonpath-ng, with filters).

    ``output.final_answer``, ``$.tool_calls[0].name`` and ``expected.facts.city`` are walked
    directly (re-evaluation reads millions of them); ``tool_calls[*].name``, ``$..name`` and
    ``tool_calls[?(@.name == 'lookup')].arguments`` are evaluated by jsonpath-ng on the
    value's JSON form. As in eval-harness, :meth:`get` returns the first match. A path that
    does not parse raises ValueError (so a bad ``field`` is an error when the eval loads).
    """

    def __init__(self, path: str) -> None:
        text = path.strip()
        self.text = path
        self._jsonpath: Any = None
        if _SIMPLE.fullmatch(text):
            text = text[2:] if text.startswith("$.") else text.lstrip("$")
            self.parts: list[str | int] = [
                int(index) if index else name for name, index in _TOKEN.findall(text)
            ]
            return
        if not text:
            raise ValueError(f"empty field path {path!r}")
        from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
        from jsonpath_ng.ext import parse  # type: ignore[attr-defined]  # re-exported by jsonpath_ng.ext

        try:
            self._jsonpath = parse(text)
        except (JsonPathLexerError, JsonPathParserError, Exception) as exc:  # noqa: BLE001 - the parser raises several types
            raise ValueError(f"invalid field path {path!r}: not a dotted path or JSONPath ({exc})") from None
        self.parts = []

    def model_fields_read(self, model: type[BaseModel]) -> frozenset[str] | None:
        """The fields of ``model`` that reading this path from one touches: the first step of
        a dotted path when it is a field of ``model`` (None: a JSONPath, or an extra key,
        which may read anything)."""
        if self._jsonpath is not None or not self.parts or not isinstance(self.parts[0], str):
            return None
        return frozenset({self.parts[0]}) if self.parts[0] in model.model_fields else None

    @property
    def is_jsonpath(self) -> bool:
        """True when the path is evaluated by jsonpath-ng (not a plain dotted path)."""
        return self._jsonpath is not None

    def get(self, root: Any, default: Any = None) -> Any:
        """The value at this path (the first match), or ``default`` when nothing matches."""
        if self._jsonpath is not None:
            data = root.model_dump(mode="python") if isinstance(root, BaseModel) else root
            matches = self._jsonpath.find(data)
            return matches[0].value if matches else default
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


@overload
def check_field_path(value: str) -> str: ...
@overload
def check_field_path(value: None) -> None: ...
@overload
def check_field_path(value: str | None) -> str | None: ...
def check_field_path(value: str | None) -> str | None:
    """Pydantic validator body: a field path must parse (so errors surface when the eval loads)."""
    if value is not None:
        FieldPath(value)
    return value
