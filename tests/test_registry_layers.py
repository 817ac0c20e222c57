"""Every built-in registry string names a module its registering package may import.

A registry's ``"module:Class"`` string is an import the import-linter contracts cannot see
(../shared/design/layers.md): this test holds each one to the layers contract of
pyproject.toml, and resolves it.
"""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from pathlib import Path

import pytest

import evalh_pipeline
from evalh_pipeline.registry import Registry

REPO = Path(__file__).resolve().parents[1]


def _layers() -> list[set[str]]:
    """The layers contract, top first: each a set of packages (``a | b`` are independent)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [{part.strip() for part in layer.split("|")} for layer in contract["layers"]]


def _registries() -> list[tuple[str, Registry[object]]]:
    """(defining module, registry) for every module-level Registry of the package."""
    found = []
    for info in pkgutil.walk_packages(evalh_pipeline.__path__, "evalh_pipeline."):
        if not info.name.endswith(".registry"):
            continue
        module = importlib.import_module(info.name)
        found += [(info.name, value) for value in vars(module).values() if isinstance(value, Registry)]
    return found


def _layer_of(module: str, layers: list[set[str]]) -> tuple[int, str]:
    """(index from the top, package) of the layer holding ``module``."""
    for index, layer in enumerate(layers):
        for package in layer:
            if module == package or module.startswith(package + "."):
                return index, package
    raise AssertionError(f"{module} is in no layer of the contract")


REGISTRATIONS = [(where, name, target) for where, registry in _registries()
                 for name, target in sorted(registry.builtins().items())]


def test_every_family_registry_is_checked():
    assert sorted(where for where, _ in _registries()) == [
        f"evalh_pipeline.{family}.registry"
        for family in ("embedders", "enrichers", "evaluators", "llm", "outputs", "systems", "workspaces")]


@pytest.mark.parametrize(("where", "name", "target"), REGISTRATIONS,
                         ids=[f"{where.rsplit('.', 2)[-2]}:{name}" for where, name, _ in REGISTRATIONS])
def test_a_registered_module_is_in_the_registering_package_or_a_layer_below(where, name, target):
    layers = _layers()
    module, _, attr = target.partition(":")
    own_index, own_package = _layer_of(where, layers)
    target_index, target_package = _layer_of(module, layers)
    assert target_package == own_package or target_index > own_index, (
        f"{where} registers {name!r} as {target}: {target_package} is not below {own_package} in the layers contract")
    assert isinstance(getattr(importlib.import_module(module), attr), type)
