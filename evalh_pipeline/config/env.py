"""``${VAR}`` and ``${VAR:-default}`` expansion in authored string values."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from evalh_pipeline.config.yaml_source import KeyPath

# Upper-case names only, as eval-harness does: `${lower}` stays literal text.
_PATTERN = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}")


class MissingEnvVar(Exception):
    """A ``${VAR}`` without a default names a variable that is not set."""

    def __init__(self, name: str, key_path: KeyPath) -> None:
        super().__init__(name)
        self.name = name
        self.key_path = key_path


def expand_env(
    value: Any, env: Mapping[str, str] | None = None, key_path: KeyPath = ()
) -> tuple[Any, dict[str, str]]:
    """Expand variables in every string of ``value``.

    Returns the expanded value and the ``{name: value}`` of every variable used, so that
    the run directory's config snapshot can mask them.
    """
    env = os.environ if env is None else env
    used: dict[str, str] = {}

    def walk(node: Any, path: KeyPath) -> Any:
        if isinstance(node, str):
            return _PATTERN.sub(lambda m: _lookup(m, path), node)
        if isinstance(node, dict):
            return {k: walk(v, (*path, k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, (*path, i)) for i, v in enumerate(node)]
        return node

    def _lookup(match: re.Match[str], path: KeyPath) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            used[name] = env[name]
            return env[name]
        if default is not None:
            return default
        raise MissingEnvVar(name, path)

    return walk(value, key_path), used
