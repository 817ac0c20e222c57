"""The JSONPaths of ``response_mapping`` and ``stream_mapping`` (jsonpath-ng, filters allowed).

Most paths are plain: ``$.choices[0].message.content``, names and integer indices only. Those
are walked directly, with jsonpath-ng's rules (a name matches a key of an object, an index an
element of an array, a negative index counts from the end, anything else matches nothing);
jsonpath-ng's own evaluation builds a context object per step and costs more than the rest
of mapping a response. Any other path (filters, wildcards, slices, ``..``) goes to jsonpath-ng.
"""

from __future__ import annotations

from typing import Any

from jsonpath_ng.ext.parser import parse as parse_jsonpath
from jsonpath_ng.jsonpath import Child, Fields, Index, Root

_MISSING = object()


class JsonPath:
    """One parsed path; :meth:`values` gives what it matches in a document."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._parsed = parse_jsonpath(text)  # raises on an invalid path
        self._steps = _plain_steps(self._parsed)

    def values(self, data: Any) -> list[Any]:
        """The matched values, in jsonpath-ng's order (an empty list: no match)."""
        if self._steps is None:
            return [match.value for match in self._parsed.find(data)]
        value = data
        for name, index in self._steps:
            if name is not None:
                try:
                    value = value.get(name, _MISSING)
                except (TypeError, AttributeError):  # not an object
                    return []
                if value is _MISSING:
                    return []
            else:
                assert index is not None
                if not isinstance(value, (list, tuple)) or not -len(value) <= index < len(value):
                    return []
                value = value[index]
        return [value]


def _plain_steps(path: Any) -> tuple[tuple[str | None, int | None], ...] | None:
    """(name, None) / (None, index) per step of a plain path; None for any other path."""
    steps: list[tuple[str | None, int | None]] = []
    while type(path) is Child:
        step = path.right
        if type(step) is Fields and len(step.fields) == 1 and step.fields[0] != "*":
            steps.append((step.fields[0], None))
        elif type(step) is Index and len(step.indices) == 1:
            steps.append((None, step.indices[0]))
        else:
            return None
        path = path.left
    if type(path) is not Root:
        return None
    return tuple(reversed(steps))


def find_first(paths: list[JsonPath], data: Any) -> list[Any] | None:
    """Values matched by the first path that matches anything; None when none does."""
    for path in paths:
        matches = path.values(data)
        if matches:
            return matches
    return None
