"""Read an openai/evals registry file: its evals, each resolved to the entry naming its class.

A registry file maps names to entries. An eval is an entry with an ``id`` naming another
entry of the file, which has the grader ``class`` (``module:Class``) and its ``args``
(openai/evals' evals/registry.py); an entry with a ``class`` that no eval names is an eval
under its own name. The files are read as openai/evals reads them (``yaml.safe_load``: YAML
1.1 scalars).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh_pipeline.config.errors import ConfigError
from evalh_pipeline.config.yaml_source import KeyPath, YamlDocument, load_yaml
from evalh_pipeline.importers.report import BadSource


@dataclass
class RegistryEval:
    """One eval of a registry file: its name, the entry with its class, and where each key is."""

    name: str
    file: Path
    doc: YamlDocument
    alias: dict[str, Any]  # the eval's own entry (id, description, metrics, ...)
    entry_key: str  # the key of the entry with the class
    entry: dict[str, Any] = field(default_factory=dict)

    @property
    def grader(self) -> str:
        return str(self.entry.get("class"))

    @property
    def args(self) -> dict[str, Any]:
        args = self.entry.get("args") or {}
        return args if isinstance(args, dict) else {}

    def line(self, *key: str | int, in_entry: bool = True) -> int | None:
        """The line of ``key`` in the class entry (or in the eval's own entry)."""
        path: KeyPath = ((self.entry_key if in_entry else self.name), *key)
        return self.doc.line_of(path)

    def arg_line(self, key: str) -> int | None:
        return self.line("args", key)


def read_registry(path: Path) -> list[RegistryEval]:
    """Every eval of the registry file ``path``; :class:`BadSource` when it is not one."""
    try:
        doc = load_yaml(path, yaml11_booleans=True)
    except ConfigError as exc:
        issue = exc.issues[0]
        raise BadSource(str(path), issue.line, issue.key, issue.message) from None
    data = doc.data
    if not isinstance(data, dict) or not any(isinstance(v, dict) and "class" in v for v in data.values()):
        raise BadSource(str(path), doc.line_of(()), "", "not an openai/evals registry file (a mapping of eval "
                        "names to entries, one of them with a `class:`, as in evals/registry/evals/*.yaml)")
    evals: list[RegistryEval] = []
    named: set[str] = set()
    for name, value in data.items():
        if not isinstance(value, dict) or "id" not in value:
            continue
        target = value["id"]
        entry = data.get(target) if isinstance(target, str) else None
        if not isinstance(entry, dict) or "class" not in entry:
            raise BadSource(str(path), doc.line_of((name, "id")), f"{name}.id",
                            f"{target!r} names no entry with a class in this file")
        named.add(target)
        evals.append(RegistryEval(str(name), path, doc, value, str(target), entry))
    for name, value in data.items():
        if isinstance(value, dict) and "class" in value and "id" not in value and name not in named:
            evals.append(RegistryEval(str(name), path, doc, {}, str(name), value))
    return evals


def registry_root(path: Path) -> Path | None:
    """The registry folder of a file in ``<registry>/evals/`` (None: not in one)."""
    parent = path.resolve().parent
    return parent.parent if parent.name == "evals" else None
