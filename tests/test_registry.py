"""Registry lookups: built-in names resolve without reading the installed packages' entry points."""

from __future__ import annotations

import pytest

from evalh_pipeline import registry as registry_module
from evalh_pipeline.registry import Registry, UnknownTypeError


def _registry() -> Registry[object]:
    return Registry("thing", "evalh_pipeline.test_things", {"ordered": "collections:OrderedDict"})


def test_a_built_in_name_resolves_without_scanning_entry_points(monkeypatch):
    def no_scan(**_kwargs):
        raise AssertionError("entry points read for a built-in name")

    monkeypatch.setattr(registry_module, "entry_points", no_scan)

    from collections import OrderedDict

    assert _registry().get("ordered") is OrderedDict


def test_a_name_the_built_ins_lack_is_looked_up_among_the_plugins(monkeypatch):
    class Plugin:
        name, value = "plugged", "collections:Counter"

    scanned: list[str] = []

    def scan(group: str):
        scanned.append(group)
        return [Plugin()]

    monkeypatch.setattr(registry_module, "entry_points", scan)
    things = _registry()

    from collections import Counter

    assert things.get("plugged") is Counter
    with pytest.raises(UnknownTypeError, match="known: ordered, plugged"):
        things.get("missing")
    assert scanned == ["evalh_pipeline.test_things"]  # read once, on the first name it had to find
