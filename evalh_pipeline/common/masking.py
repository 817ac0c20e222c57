"""Mask credentials before a config touches disk."""

from __future__ import annotations

import re
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
_KEYWORD_PASSWORD = re.compile(r"(?P<name>(?:^|\s)password\s*=\s*)(?:'[^']*'|\S+)", re.IGNORECASE)


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
    # Longest first, so a secret that contains another is masked whole.
    for secret in sorted(secret_values, key=len, reverse=True):
        if secret and secret in text:
            text = text.replace(secret, MASK)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    text = _KEYWORD_PASSWORD.sub(lambda m: f"{m.group('name')}{MASK}", text)
    return _URL_SECRET_PARAM.sub(lambda m: f"{m.group('name')}{MASK}", text)
