"""Mask credentials before anything touches disk: the config snapshot, traces, results, errors.

Which values are secrets is decided in one place, ``config/env.py`` (:func:`secret_values`
there); an ``EvalSpec`` carries the set and every writer masks it here.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

MASK = "***MASKED***"

# Whole-key matches, so `max_tokens` or `token_input` are left alone.
_SECRET_KEY = re.compile(
    r"^(.*[_-])?(api[_-]?key|apikey|key|token|access[_-]?token|refresh[_-]?token|secret|client[_-]?secret|"
    r"password|passwd|pwd|authorization|auth|cookie|set-cookie|credentials?|private[_-]?key|bearer)$",
    re.IGNORECASE,
)
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@", re.IGNORECASE)
_URL_SECRET_PARAM = re.compile(
    r"(?P<name>[?&](?:api[_-]?key|key|token|access_token|secret|password|sig|signature)=)[^&#\s]+", re.IGNORECASE
)

# libpq's key=value connection strings: `host=db user=evalh password=...`.
_KEYWORD_PASSWORD = re.compile(r"(?P<name>(?:^|\s)\w*password\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|\S+)", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.match(key))


def mask_config(value: Any, secret_values: frozenset[str] = frozenset()) -> Any:
    """A copy of ``value`` with secret-looking keys, URL credentials and known secret values masked."""
    if isinstance(value, dict):
        return {
            k: (MASK if isinstance(k, str) and is_secret_key(k) and v not in (None, "") else mask_config(v, secret_values))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [mask_config(v, secret_values) for v in value]
    if isinstance(value, str):
        return mask_text(value, secret_values)
    return value


def mask_text(text: str, secret_values: frozenset[str] = frozenset()) -> str:
    """Mask credentials inside URLs and any occurrence of a known secret value."""
    text = mask_known(text, secret_values)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    text = _KEYWORD_PASSWORD.sub(lambda m: f"{m.group('name')}{MASK}", text)
    return _URL_SECRET_PARAM.sub(lambda m: f"{m.group('name')}{MASK}", text)


def mask_known(text: str, secret_values: frozenset[str]) -> str:
    """``text`` with every occurrence of a known secret value masked (and nothing else changed)."""
    for secret in _longest_first(secret_values):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def mask_known_bytes(data: bytes, secret_values: frozenset[str]) -> bytes:
    """:func:`mask_known` for raw bytes (a file a system wrote): ``data`` itself when no secret occurs."""
    for secret in _longest_first(secret_values):
        needle = secret.encode("utf-8")
        if needle in data:
            data = data.replace(needle, MASK.encode("utf-8"))
    return data


def mask_json_text(document: str, secret_values: frozenset[str]) -> str:
    """One JSON document (a trace or result line) with known secrets masked in its strings,
    keys included (a tool call's arguments may be keyed by what the system was given).

    Returns ``document`` itself when no secret occurs in it (the common case costs one
    substring search per secret). Two keys that mask alike are told apart by a suffix
    (``***MASKED*** (2)``), so no value is lost.
    """
    if not secret_values or not any(needle in document for needle in _json_needles(secret_values)):
        return document
    masked = _mask_values(json.loads(document), secret_values)
    return json.dumps(masked, ensure_ascii=False, separators=(",", ":"))


def mask_json_line(line: bytes, secret_values: frozenset[str]) -> bytes:
    """:func:`mask_json_text` for one encoded JSON line (``\\n``-terminated or not), searched as bytes."""
    if not secret_values or not any(needle in line for needle in _json_byte_needles(secret_values)):
        return line
    ending = b"\n" if line.endswith(b"\n") else b""
    return mask_json_text(line.decode(), secret_values).encode() + ending


def _mask_values(value: Any, secret_values: frozenset[str]) -> Any:
    if isinstance(value, str):
        return mask_known(value, secret_values)
    if isinstance(value, dict):
        masked: dict[str, Any] = {}
        for key, item in value.items():
            new_key = mask_known(key, secret_values)
            if new_key != key:
                base, n = new_key, 2
                while new_key in value or new_key in masked:
                    new_key, n = f"{base} ({n})", n + 1
            masked[new_key] = _mask_values(item, secret_values)
        return masked
    if isinstance(value, list):
        return [_mask_values(v, secret_values) for v in value]
    return value


@lru_cache(maxsize=32)
def _longest_first(secret_values: frozenset[str]) -> tuple[str, ...]:
    # Longest first, so a secret that contains another is masked whole.
    return tuple(sorted((s for s in secret_values if s), key=len, reverse=True))


@lru_cache(maxsize=32)
def _json_byte_needles(secret_values: frozenset[str]) -> tuple[bytes, ...]:
    return tuple(needle.encode() for needle in _json_needles(secret_values))


@lru_cache(maxsize=32)
def _json_needles(secret_values: frozenset[str]) -> tuple[str, ...]:
    """Each secret as it can appear inside a JSON string (escaped, with or without \\u escapes)."""
    needles = set()
    for secret in secret_values:
        if secret:
            needles.add(json.dumps(secret, ensure_ascii=False)[1:-1])
            needles.add(json.dumps(secret)[1:-1])
    return tuple(needles)
