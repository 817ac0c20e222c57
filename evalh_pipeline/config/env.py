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

from evalh_pipeline.errors import UserError
from evalh_pipeline.config.yaml_source import KeyPath
from evalh_pipeline.common.masking import is_secret_key

# Upper-case names only, as eval-harness does: `${lower}` stays literal text.
_PATTERN = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}")
# Variable names that say "secret" (a substring: OPENAI_API_KEY, GH_TOKEN, DB_PASSWORD).
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)", re.IGNORECASE)
# Keys under which values travel to the system or a judge: headers, a process's env and argv,
# query parameters. What in them is a credential is decided by the name it is given there.
_CARRIERS = {"headers": "header", "env": "env", "command": "argv", "argv": "argv", "args": "argv",
             "query_params": "query", "params": "query", "query": "query"}
# One word of a name (an env entry, a cli flag) that says "credential": SERVICE_LOGIN, --sig,
# --api-key, X-Auth-Token. Words end at punctuation and lower-to-upper case changes.
_CREDENTIAL_WORD = re.compile(
    r"(.*(key|token|secret|password)|passwd|passphrase|pwd|pass|credentials?|auth|authorization|login|sig|"
    r"signature|session|cookie|bearer|private|jwt)", re.IGNORECASE)
_WORD_BREAK = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
# Headers and query parameters carry credentials under any name (X-Tenant, ?s=, ?sv=): a value
# in one is a credential unless the name is one of these, which never carry one.
_PUBLIC_HEADERS = frozenset({
    "accept", "accept-encoding", "accept-language", "content-type", "content-language", "user-agent",
    "referer", "http-referer", "origin", "x-title", "cache-control", "connection", "x-request-id",
})
_PUBLIC_HEADER_SUFFIXES = ("-version", "-beta")
_PUBLIC_PARAMS = frozenset({
    "api-version", "api_version", "apiversion", "version", "model", "format", "alt", "stream", "lang", "language",
    "locale", "hl", "sslmode", "connect_timeout", "application_name", "target_session_attrs", "charset",
})
_HEADER_FLAGS = frozenset({"-h", "--header"})
_URL_ANYWHERE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*")
# libpq key=value connection strings: `host=db user=evalh password='a b' dbname=evals`.
_KEYWORD_PASSWORD = re.compile(r"(?<![\w])\w*password\s*=\s*(?:'(?P<quoted>(?:[^'\\]|\\.)*)'?|(?P<bare>[^\s&]+))",
                               re.IGNORECASE)
# `--token=value`, `token=value` inside one argument.
_ASSIGNED_NAME = re.compile(r"(?:^|[\s,;])-{0,2}(?P<name>[A-Za-z][\w.-]*)=$")
# Values too plain to be credentials: masking them would garble every trace they appear in.
_PLAIN_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "none"})
MIN_SECRET_BY_USE = 4
# Host variables holding credentials by convention (OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY);
# stricter than a key match, so PWD or TOKENIZERS_PARALLELISM are not taken for secrets.
_HOST_SECRET_NAME = re.compile(r"(^|_)(APIKEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)


class MissingEnvVar(UserError):
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
    previous: str | None = None  # the list item before this string, as written (an argv's flag)

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

    def walk(node: Any, path: KeyPath, previous: str | None = None) -> Any:
        if isinstance(node, str):
            return expand(node, path, previous) if "${" in node else node
        if isinstance(node, dict):
            return {k: walk(v, (*path, k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, (*path, i), node[i - 1] if i and isinstance(node[i - 1], str) else None)
                    for i, v in enumerate(node)]
        return node

    def expand(text: str, path: KeyPath, previous: str | None) -> str:
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
        used.extend(Substitution(name, val, path, expanded, start, previous) for name, val, start in spans)
        return expanded

    return walk(value, key_path), used


def secret_values(substitutions: Iterable[Substitution], host_env: Mapping[str, str] | None = None) -> frozenset[str]:
    """The values that must be masked wherever a run records something.

    - by name: a variable named like a secret (``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
      ``*PASSWORD*``, ``*CREDENTIAL*``, ``*AUTH*``): its whole value;
    - by key: a value written under a secret-looking key (``api_key:``, ``token:``);
    - by use, where credentials travel (a credential, not everything that came from the
      environment): the value of a header, a query parameter (in a URL or ``query_params``)
      unless its name is a public one (``Accept``, ``*-Version``, ``api-version``, ``model``...);
      an ``env`` entry or a cli flag (``--sig VALUE``, ``--api-key=VALUE``) named like a
      credential (``*KEY``, ``*TOKEN``, ``LOGIN``, ``SIG``, ``SESSION``...); a URL's userinfo
      and fragment; a libpq ``password=``. Never a URL's scheme, host, port or path. A by-use
      value shorter than :data:`MIN_SECRET_BY_USE` characters, a number of fewer than 8
      digits (a port) or a word such as ``true`` is not masked: it cannot be a credential,
      and masking it would garble every trace it appears in;
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
    """The parts of ``sub.value`` that sit where credentials travel (see :func:`secret_values`)."""
    kind, name = _carrier(sub.key_path)
    if kind == "header" and not _public_header(name):
        return [sub.value]
    if kind == "query" and not _public_param(name):
        return [sub.value]
    if kind == "env" and (name is None or credential_name(name)):
        return [sub.value]
    if kind == "argv":
        if _secret_argument(sub):
            return [sub.value]
        if (sub.previous or "").lower() in _HEADER_FLAGS:  # curl -H "X-Api-Key: ${KEY}"
            header, colon, _ = sub.text.partition(":")
            if colon and sub.start > len(header) and not _public_header(header.strip()):
                return [sub.value]
    spans = [*_url_credential_spans(sub.text), *_keyword_password_spans(sub.text)]
    parts = []
    for begin, end in spans:
        lo, hi = max(begin, sub.start), min(end, sub.end)
        if lo < hi:
            parts.append(sub.text[lo:hi])
    return parts


def credential_name(name: str) -> bool:
    """True when a word of ``name`` says credential (``SERVICE_LOGIN``, ``--sig``, ``X-Auth-Token``)."""
    return any(_CREDENTIAL_WORD.fullmatch(word) for word in _WORD_BREAK.split(name) if word)


def _carrier(key_path: KeyPath) -> tuple[str | None, str | None]:
    """(kind, name) of the innermost carrier key in ``key_path``: the header, env entry or
    parameter name after it (None for an argv item or a value with no name)."""
    for i in range(len(key_path) - 1, -1, -1):
        part = key_path[i]
        if isinstance(part, str) and part.lower() in _CARRIERS:
            after = key_path[i + 1] if i + 1 < len(key_path) else None
            return _CARRIERS[part.lower()], after if isinstance(after, str) else None
    return None, None


def _public_header(name: str | None) -> bool:
    lowered = (name or "").lower()
    return lowered in _PUBLIC_HEADERS or lowered.endswith(_PUBLIC_HEADER_SUFFIXES) or lowered.startswith("content-")


def _public_param(name: str | None) -> bool:
    return (name or "").lower() in _PUBLIC_PARAMS


def _secret_argument(sub: Substitution) -> bool:
    """An argv item after a flag named like a credential, or ``--flag=`` / ``name=`` so named."""
    previous = sub.previous or ""
    if sub.start == 0 and previous.startswith("-") and "=" not in previous and credential_name(previous):
        return True
    assigned = _ASSIGNED_NAME.search(sub.text[:sub.start])
    return assigned is not None and credential_name(assigned.group("name"))


def _url_credential_spans(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` holding a URL's userinfo, its non-public query values and its fragment."""
    spans = []
    for url in _URL_ANYWHERE.finditer(text):
        begin, whole = url.start(), url.group()
        after_scheme = whole.index("://") + 3
        authority_end = len(whole)
        for stop in "/?#":
            found = whole.find(stop, after_scheme)
            if found >= 0:
                authority_end = min(authority_end, found)
        at = whole.rfind("@", after_scheme, authority_end)
        if at >= 0:
            spans.append((begin + after_scheme, begin + at))
        hash_at = whole.find("#", authority_end)
        query_at = whole.find("?", authority_end, hash_at if hash_at >= 0 else len(whole))
        if hash_at >= 0:
            spans.append((begin + hash_at + 1, begin + len(whole)))
        if query_at >= 0:
            offset = begin + query_at + 1
            for pair in whole[query_at + 1:hash_at if hash_at >= 0 else len(whole)].split("&"):
                name, equals, _ = pair.partition("=")
                if not _public_param(name if equals else None):
                    start = offset + (len(name) + 1 if equals else 0)
                    spans.append((start, offset + len(pair)))
                offset += len(pair) + 1
    return spans


def _keyword_password_spans(text: str) -> list[tuple[int, int]]:
    return [match.span("quoted") if match.group("quoted") is not None else match.span("bare")
            for match in _KEYWORD_PASSWORD.finditer(text)]


def _credential_like(value: str) -> bool:
    text = value.strip()
    if len(text) < MIN_SECRET_BY_USE or text.lower() in _PLAIN_WORDS:
        return False
    return not (text.isdigit() and len(text) < 8)
