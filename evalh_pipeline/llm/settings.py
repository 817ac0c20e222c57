"""Where and how a chat backend calls its server: base URL, key (named, read from the
environment), model and limits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class BackendSettings:
    """Where and how a backend calls its server; resolved once, when the evaluator is built."""

    model: str
    base_url: str
    api_key: str | None
    timeout_seconds: float
    max_tokens: int
    temperature: float = 0.0


def resolve_endpoint(env: Mapping[str, str], *, base_url: str | None, base_url_env: str, default_base_url: str,
                     api_key_env: str) -> tuple[str, str | None]:
    """(base URL without a trailing slash, API key or None): the URL given, else the one in
    ``base_url_env``, else the provider's public one; the key from ``api_key_env``."""
    url = base_url or env.get(base_url_env) or default_base_url
    return url.rstrip("/"), env.get(api_key_env)
