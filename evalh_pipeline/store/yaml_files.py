"""YAML for produced files (summary.yaml, config.yaml), through libyaml when it is there."""

from __future__ import annotations

from typing import Any

import yaml

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def dump_yaml(value: Any) -> str:
    """Block-style YAML in the order the keys were given."""
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True)


def load_yaml_text(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
