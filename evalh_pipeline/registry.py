"""Registries map YAML type names to classes.

Built-in entries are ``"module:Class"`` strings imported on first use, so listing the
known names costs nothing. Third-party packages add entries through the Python entry
point group of the family (``evalh_pipeline.systems``, ``evalh_pipeline.evaluators``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from evalh_pipeline.errors import UserError

T = TypeVar("T")


class UnknownTypeError(UserError, LookupError):
    """A YAML type name that no built-in or plugin provides."""

    def __init__(self, family: str, name: str, known: list[str]) -> None:
        self.family, self.name, self.known = family, name, known
        super().__init__(f"unknown {family} {name!r} (known: {', '.join(known)})")


class Registry(Generic[T]):
    """Name -> class lookup for one family of plugins."""

    def __init__(self, family: str, entry_point_group: str, builtins: dict[str, str]) -> None:
        self.family = family
        self.entry_point_group = entry_point_group
        self._builtins = dict(builtins)
        self._targets: dict[str, str] = dict(builtins)
        self._classes: dict[str, type[T]] = {}
        self._plugins_loaded = False

    def register(self, name: str, cls: type[T]) -> None:
        """Register a class in-process (tests, notebooks); entry points are the packaged way."""
        self._classes[name] = cls

    def unregister(self, name: str) -> None:
        """Forget an in-process registration (tests clean up after themselves)."""
        self._classes.pop(name, None)

    @contextmanager
    def registered(self, name: str, cls: type[T]) -> Iterator[None]:
        """``cls`` under ``name`` for the block only; what was registered before comes back after."""
        previous = self._classes.get(name)
        self.register(name, cls)
        try:
            yield
        finally:
            if previous is None:
                self.unregister(name)
            else:
                self._classes[name] = previous

    def builtins(self) -> dict[str, str]:
        """The built-in entries: name -> ``"module:Class"`` (what the import contracts must cover)."""
        return dict(self._builtins)

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted({*self._targets, *self._classes})

    def get(self, name: str) -> type[T]:
        """The class registered under ``name``; raises :class:`UnknownTypeError`."""
        if name in self._classes:
            return self._classes[name]
        # A built-in name wins over a plugin of the same name (_load_plugins keeps it), so
        # the entry points (a scan of every installed distribution's metadata, ~20 ms per
        # family) are read only for a name the built-ins do not have.
        if name not in self._targets:
            self._load_plugins()
        target = self._targets.get(name)
        if target is None:
            raise UnknownTypeError(self.family, name, self.names())
        module_name, _, attr = target.partition(":")
        cls: type[T] = getattr(importlib.import_module(module_name), attr)
        self._classes[name] = cls
        return cls

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in entry_points(group=self.entry_point_group):
            self._targets.setdefault(ep.name, ep.value)
