"""Every YAML the tool reads goes through here, with limits; produced files are written here too.

Reading is guarded against documents that cost more than their size: nesting deeper than
:data:`MAX_DEPTH` levels (PyYAML and libyaml recurse per level, slow down quadratically
with depth, and libyaml's composer crashes the process at a few hundred thousand levels),
recursive aliases, and aliases that repeat more nodes than :func:`repeat_budget` allows
(a "billion laughs" of a few hundred bytes expands to millions of nodes). Every alias
counts the nodes it repeats, so both the number of aliases and their size are bounded. A
refused document raises :class:`YamlLimitError`, a ``yaml.YAMLError`` with the line of the
offending node, so existing handlers report it like any syntax error.

The authored-file loader (``config/yaml_source.py``, which keeps a line per key) composes
with :class:`GuardedComposer` (one pass); produced files (``summary.yaml``, ``config.yaml``,
``drift.yaml``) and the price table use :func:`load_yaml_text`, which checks libyaml's event
stream first (:func:`check_shape`, cheap) and then loads with libyaml.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from evalh_pipeline.errors import UserError

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Deeper than any eval, dataset or produced file needs; far below the recursion limit.
MAX_DEPTH = 100
# Aliases may repeat this many nodes in any document, and more in a large one (see repeat_budget).
MIN_REPEAT_BUDGET = 100_000
REPEAT_FACTOR = 10

_COLLECTION_STARTS = (SequenceStartEvent, MappingStartEvent)


def repeat_budget(composed_nodes: int) -> int:
    """How many nodes aliases may repeat in a document of ``composed_nodes`` written nodes.

    Proportional to the document, so the work of reading it stays linear in its size.
    """
    return max(MIN_REPEAT_BUDGET, REPEAT_FACTOR * composed_nodes)


class YamlLimitError(UserError, ComposerError):
    """A document refused for its shape (depth, aliases); ``problem_mark`` has its line."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(None, None, problem, mark)

    def __str__(self) -> str:
        mark = self.problem_mark
        return f"{self.problem} (line {mark.line + 1})" if mark is not None else str(self.problem)


class _ShapeGuard:
    """The depth and alias accounting of one document, fed event by event."""

    def __init__(self) -> None:
        self.depth = 0
        self.composed = 0  # nodes written in the document
        self.repeated = 0  # nodes repeated by aliases
        self.sizes: dict[str, int] = {}  # anchor -> expanded size of its node
        self.open: list[tuple[str | None, int]] = []  # collections being read: (anchor, count at start)

    def start(self, event: Any) -> None:
        """A scalar, or the start of a collection."""
        if isinstance(event, _COLLECTION_STARTS):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise YamlLimitError(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
            self.open.append((event.anchor, self.composed + self.repeated))
        else:
            self.composed += 1
            if event.anchor is not None:
                self.sizes[event.anchor] = 1

    def end(self) -> None:
        """The end of the innermost collection."""
        anchor, before = self.open.pop()
        self.depth -= 1
        self.composed += 1
        if anchor is not None:
            # The expanded size of the anchored node: what each alias to it repeats.
            self.sizes[anchor] = self.composed + self.repeated - before

    def alias(self, event: AliasEvent) -> None:
        size = self.sizes.get(event.anchor) if event.anchor is not None else None
        if size is None:
            if any(anchor == event.anchor for anchor, _ in self.open):
                raise YamlLimitError(f"alias *{event.anchor} is inside the node it names "
                                     "(recursive aliases are not allowed)", event.start_mark)
            return  # an undefined alias: the composer reports it
        self.repeated += size
        budget = repeat_budget(self.composed)
        if self.repeated > budget:
            raise YamlLimitError(f"aliases repeat more than {budget:,} nodes (an alias bomb?); "
                                 "write the repeated parts out or use fewer aliases", event.start_mark)


class GuardedComposer(Composer):
    """PyYAML's composer with the limits of this module, checked while composing (one pass)."""

    peek_event: Callable[[], Any]  # the parser's, in the loader this is mixed into

    def compose_document(self) -> Any:
        self._guard = _ShapeGuard()
        return super().compose_document()

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            self._guard.alias(event)
            return super().compose_node(parent, index)
        self._guard.start(event)
        node = super().compose_node(parent, index)
        if isinstance(event, _COLLECTION_STARTS):
            self._guard.end()
        return node


def check_shape(text: str) -> None:
    """Raise :class:`YamlLimitError` if ``text`` nests too deep or its aliases repeat too much.

    Reads only the event stream (libyaml's when available, which is cheap) and stops at the
    first violation, before anything deep is composed. Syntax errors raise as in a load.
    """
    guard = _ShapeGuard()
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, AliasEvent):
            guard.alias(event)
        elif isinstance(event, (ScalarEvent, *_COLLECTION_STARTS)):
            guard.start(event)
        elif isinstance(event, (SequenceEndEvent, MappingEndEvent)):
            guard.end()
        elif isinstance(event, DocumentStartEvent):
            guard = _ShapeGuard()


def describe_yaml_error(exc: yaml.YAMLError, text: str) -> tuple[int | None, str]:
    """The line (1-based, when known) and a one-line description of a PyYAML error on ``text``."""
    if isinstance(exc, yaml.reader.ReaderError):
        char = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return text.count("\n", 0, exc.position) + 1, f"character U+{char:04X} is not allowed in YAML ({exc.reason})"
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    return line, " ".join(str(problem).split())


def dump_yaml(value: Any) -> str:
    """Block-style YAML in the order the keys were given."""
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True)


def load_yaml_text(text: str) -> Any:
    """Parse one YAML document (YAML 1.1 scalars, safe types only) within the limits of this module."""
    check_shape(text)
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
