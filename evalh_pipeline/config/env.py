"""``${VAR}`` and ``${VAR:-default}`` expansion in authored string values, and which
expanded values are secrets.

:func:`secret_values` is the one place that decides what must never be recorded: the
run directory's config snapshot, traces, results and error messages all mask the set it
returns. A value is a secret by its name, by the key it is written under, or by its use
(see the function).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evalh_pipeline.config.yaml_source import KeyPath
from evalh_pipeline.common.masking import is_secret_key

# Upper-case names only, as eval-harness does: `${lower}` stays literal text.
_PATTERN = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}")
# Variable names that say "secret" (a substring: OPENAI_API_KEY, GH_TOKEN, DB_PASSWORD).
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)", re.IGNORECASE)
# Keys whose values are sent to the system or a judge as credentials travel: a value
# substituted under one of them is a secret whatever its variable is called.
_CARRIER_KEYS = frozenset({"headers", "env", "command", "argv", "args", "query_params", "params", "query"})
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<authority>[^/?#]*)")
# Values too plain to be credentials: masking them would garble every trace they appear in.
_PLAIN_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "none"})
MIN_SECRET_BY_USE = 4
# Host variables holding credentials by convention (OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY);
# stricter than a key match, so PWD or TOKENIZERS_PARALLELISM are not taken for secrets.
_HOST_SECRET_NAME = re.compile(r"(^|_)(APIKEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)


class MissingEnvVar(Exception):
    """A ``${VAR}`` without a default names a variable that is not set."""

    def __init__(self, name: str, key_path: KeyPath) -> None:
        super().__init__(name)
        self.name = name
        self.key_path = key_path


@dataclass(frozen=True)
class Substitution:
    """One ``${VAR}`` replaced by the environment's value, and where it landed."""

    name: str
    value: str
    key_path: KeyPath
    text: str  # the whole expanded string
    start: int  # where ``value`` starts in ``text``

    @property
    def end(self) -> int:
        return self.start + len(self.value)


def expand_env(value: Any, env: Mapping[str, str], key_path: KeyPath = ()) -> tuple[Any, list[Substitution]]:
    """Expand variables in every string of ``value`` from ``env`` (the caller's settings: config
    never reads the process environment itself).

    Returns the expanded value and every substitution made from the environment (defaults
    written in the file are not listed: they are in the file already).
    """
    used: list[Substitution] = []

    def walk(node: Any, path: KeyPath) -> Any:
        if isinstance(node, str):
            return expand(node, path) if "${" in node else node
        if isinstance(node, dict):
            return {k: walk(v, (*path, k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, (*path, i)) for i, v in enumerate(node)]
        return node

    def expand(text: str, path: KeyPath) -> str:
        pieces: list[str] = []
        spans: list[tuple[str, str, int]] = []
        length = last = 0
        for match in _PATTERN.finditer(text):
            literal = text[last:match.start()]
            pieces.append(literal)
            length += len(literal)
            name, default = match.group(1), match.group(2)
            if name in env:
                replacement = env[name]
                spans.append((name, replacement, length))
            elif default is not None:
                replacement = default
            else:
                raise MissingEnvVar(name, path)
            pieces.append(replacement)
            length += len(replacement)
            last = match.end()
        pieces.append(text[last:])
        expanded = "".join(pieces)
        used.extend(Substitution(name, val, path, expanded, start) for name, val, start in spans)
        return expanded

    return walk(value, key_path), used


def secret_values(substitutions: Iterable[Substitution], host_env: Mapping[str, str] | None = None) -> frozenset[str]:
    """The values that must be masked wherever a run records something.

    - by name: a variable named like a secret (``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
      ``*PASSWORD*``, ``*CREDENTIAL*``, ``*AUTH*``): its whole value;
    - by key: a value written under a secret-looking key (``api_key:``, ``token:``);
    - by use: a value substituted into ``headers``, ``env``, ``command``/``argv``/``args``
      or query parameters, or into a URL anywhere but its scheme, host and port (so the
      userinfo, path, query and fragment). A by-use value shorter than
      :data:`MIN_SECRET_BY_USE` characters, a number of fewer than 8 digits (a port) or a
      word such as ``true`` is not masked: it cannot be a credential, and masking it would
      garble every trace it appears in;
    - the host's own credentials (``host_env`` variables named like
      ``OPENAI_API_KEY``, ``GITHUB_TOKEN`` or ``DB_PASSWORD``, values of 8+ characters): a ``cli`` system
      with ``inherit_env`` or a ``python_function`` can read them and print them.
    """
    secrets: set[str] = set()
    for sub in substitutions:
        if not sub.value:
            continue
        if _SECRET_NAME.search(sub.name) or any(isinstance(p, str) and is_secret_key(p) for p in sub.key_path):
            secrets.add(sub.value)
            continue
        secrets.update(part for part in _used_as_credential(sub) if _credential_like(part))
    for name, value in (host_env or {}).items():
        if _HOST_SECRET_NAME.search(name) and len(value) >= 8:
            secrets.add(value)
    return frozenset(secrets)


def _used_as_credential(sub: Substitution) -> list[str]:
    if any(isinstance(p, str) and p.lower() in _CARRIER_KEYS for p in sub.key_path):
        return [sub.value]
    url = _URL.match(sub.text)
    if url is None:
        return []
    # Public: the scheme and host:port. Userinfo and everything after the authority are not.
    authority_start, authority_end = url.start("authority"), url.end("authority")
    at = url.group("authority").rfind("@")
    host_start = authority_start + at + 1 if at >= 0 else authority_start
    parts = []
    for begin, end in ((authority_start, host_start), (authority_end, len(sub.text))):
        lo, hi = max(begin, sub.start), min(end, sub.end)
        if lo < hi:
            parts.append(sub.text[lo:hi])
    return parts


def _credential_like(value: str) -> bool:
    text = value.strip()
    if len(text) < MIN_SECRET_BY_USE or text.lower() in _PLAIN_WORDS:
        return False
    return not (text.isdigit() and len(text) < 8)
