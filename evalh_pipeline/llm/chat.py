"""The chat backend contract: one system + user prompt in, one text reply and its usage out.

Judges ask it for JSON matching a verdict schema; the user simulator for plain text. The
classes keep the names plugin authors know them by (a *judge backend*, entry point group
``evalh_pipeline.judges``): every chat backend is one, whoever calls it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from evalh_pipeline.errors import CellError
from evalh_pipeline.common.http_client import HttpClient, Response, TimeoutException, TransportError
from evalh_pipeline.common.ratelimits import rate_limit_of
from evalh_pipeline.common.tls import default_ssl_context
from evalh_pipeline.llm.settings import BackendSettings, resolve_endpoint


@dataclass(frozen=True)
class JudgeReply:
    """What a backend returned for one call: the reply text and what it cost."""

    text: str
    tokens_in: int | None
    tokens_out: int | None
    model: str
    # Set only when the server reports it (e.g. OpenRouter's usage.cost); otherwise priced from tokens.
    cost_usd: float | None = None


class JudgeError(CellError, RuntimeError):
    """A judge call that produced no usable reply: the result is errored, not failed."""

    error_type = "judge_error"  # the result's error.type (models/result.py NOT_JUDGED_ERRORS)


class JudgeTransientError(JudgeError):
    """A failure worth one retry: HTTP 5xx, a timeout, a refused connection."""


class JudgeRateLimited(JudgeTransientError):
    """The judge server answered with a rate limit; ``retry_after``: the wait it asked for."""

    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


async def post_json(url: str, headers: dict[str, str], body: dict[str, Any], timeout: float) -> Response:
    """One chat request on a fresh client (see :class:`JudgeBackend` for why fresh); transport
    errors propagate for the caller to word."""
    async with HttpClient(connections=1, tls=default_ssl_context(), timeout=timeout) as client:
        return await client.request("POST", url, headers=headers, json=body)


class JudgeBackend(ABC):
    """A chat API that can answer a prompt (a judge's, the simulated user's).

    Subclasses set the class attributes and implement :meth:`request` and :meth:`parse`;
    the HTTP call (common/http_client.py), the error mapping and the reply shape are shared.
    A fresh client is opened per call: evaluators outlive event loops (the runner
    judges under several ``asyncio.run`` calls) and have no close hook, and a client's
    connection pool belongs to the loop that opened it. Judge calls take seconds, so the
    lost connection reuse does not matter; the TLS context (the costly part) is shared.
    """

    name: ClassVar[str] = ""
    base_url_env: ClassVar[str] = ""
    api_key_env: ClassVar[str] = ""
    default_base_url: ClassVar[str] = ""
    # fnmatch patterns of model names this backend serves when no `backend:` is given.
    model_patterns: ClassVar[tuple[str, ...]] = ()
    # Provider prefixes accepted in `provider/model` names (`openai/gpt-4o`).
    providers: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: BackendSettings) -> None:
        self.settings = settings

    @classmethod
    def settings_from(cls, env: Mapping[str, str], *, model: str, base_url: str | None, api_key_env: str | None,
                      timeout_seconds: float, max_tokens: int, temperature: float = 0.0) -> BackendSettings:
        """Resolve base URL and key: explicit config, then the backend's environment variables."""
        url, api_key = resolve_endpoint(env, base_url=base_url, base_url_env=cls.base_url_env,
                                        default_base_url=cls.default_base_url, api_key_env=api_key_env or cls.api_key_env)
        return BackendSettings(model=model, base_url=url, api_key=api_key, timeout_seconds=timeout_seconds,
                               max_tokens=max_tokens, temperature=temperature)

    @property
    def needs_api_key(self) -> bool:
        """A key is required for the provider's public endpoint; a custom server may do without."""
        return self.settings.base_url == self.default_base_url.rstrip("/")

    @abstractmethod
    def request(self, system: str, user: str, json_schema: dict[str, Any] | None) -> tuple[str, dict[str, str], dict[str, Any]]:
        """(url, headers, JSON body) of one call; ``json_schema`` None asks for plain text."""
        ...

    @abstractmethod
    def parse(self, body: Any) -> JudgeReply:
        """The reply text and usage out of a successful response body."""
        ...

    async def complete(self, system: str, user: str, json_schema: dict[str, Any] | None) -> JudgeReply:
        """One judge call. Raises :class:`JudgeRateLimited`, :class:`JudgeTransientError` or :class:`JudgeError`."""
        if self.needs_api_key and not self.settings.api_key:
            raise JudgeError(f"no API key for the {self.name} judge backend: set {self.api_key_env} "
                             f"(or name another variable with api_key_env, or point base_url at your own server)")
        url, headers, body = self.request(system, user, json_schema)
        try:
            response = await post_json(url, headers, body, self.settings.timeout_seconds)
        except TimeoutException:
            raise JudgeTransientError(f"judge call to {url} timed out after {self.settings.timeout_seconds}s") from None
        except TransportError as exc:
            raise JudgeTransientError(f"judge call to {url} failed: {type(exc).__name__}: {exc}") from None
        if (limited := rate_limit_of(response.status_code, response.headers, response.content)) is not None:
            raise JudgeRateLimited(f"judge server answered HTTP {response.status_code} (rate limited): "
                                   f"{response.text[:300]}", limited.retry_after)
        if response.status_code >= 500:
            raise JudgeTransientError(f"judge server answered HTTP {response.status_code}: {response.text[:300]}")
        if response.status_code >= 400:
            raise JudgeError(f"judge server answered HTTP {response.status_code}: {response.text[:300]}")
        try:
            return self.parse(response.json())
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise JudgeError(f"unexpected {self.name} response shape: {type(exc).__name__}: {exc}; "
                             f"body: {response.text[:300]}") from None
