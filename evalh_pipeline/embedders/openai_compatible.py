"""``openai_compatible``: POST ``{base_url}/embeddings`` of any OpenAI-compatible server (common/http_client.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from evalh_pipeline.embedders.base import Embedder, EmbedderConfigModel, EmbedderError, EmbedderRateLimited
from evalh_pipeline.common.http_client import HttpClient, HttpError, Response
from evalh_pipeline.common.ratelimits import RateLimitAnswer, RateLimits, call_within_limit, rate_limit_of
from evalh_pipeline.common.retrying import Backoff, retry_on_exception
from evalh_pipeline.common.tls import default_ssl_context
from evalh_pipeline.llm import openai_chat
from evalh_pipeline.llm.settings import resolve_endpoint


class OpenAICompatibleConfig(EmbedderConfigModel):
    model: str = "text-embedding-3-small"
    # None: $OPENAI_BASE_URL, else the OpenAI API.
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    dimensions: int | None = Field(default=None, ge=1)
    batch_size: int = Field(default=256, ge=1)
    timeout_seconds: float = Field(default=30.0, gt=0)
    # Extra attempts after a transport error or a 5xx. A rate limit (429, a 503 with
    # Retry-After) is waited out as a system's or judge's is (run.rate_limits).
    retries: int = Field(default=1, ge=0, le=10)
    # A named limit of run.executor.pools shared with systems and judges (None: the limit of
    # base_url's host and this key, also shared with them).
    pool: str | None = None


class OpenAICompatibleEmbedder(Embedder[OpenAICompatibleConfig]):
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama,
    LM Studio, llama.cpp server, ...). Key and base URL are read from the environment when
    the evaluator is built; servers that need no key work without one. Every request goes
    through the run's limiter of its pool, else of its host and key (common/ratelimits/):
    a rate limit is waited out (honouring Retry-After), and one that lasts past
    ``timeout_seconds`` errors the result ``rate_limited``."""

    def __init__(self, type_name: str, config: Mapping[str, Any] | None = None,
                 env: Mapping[str, str] | None = None, rate_limits: RateLimits | None = None) -> None:
        super().__init__(type_name, config, env, rate_limits)
        c = self.config
        self.base_url, api_key = resolve_endpoint(self.env, base_url=c.base_url, base_url_env=openai_chat.BASE_URL_ENV,
                                                  default_base_url=openai_chat.DEFAULT_BASE_URL,
                                                  api_key_env=c.api_key_env)
        self._api_key = api_key or None
        self._limiter = (self.rate_limits.pool(c.pool) if c.pool is not None
                         else self.rate_limits.endpoint(self.base_url, self._api_key))

    @property
    def model(self) -> str:
        return self.config.model

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        c = self.config
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        vectors: list[list[float]] = []
        async with HttpClient(connections=1, tls=default_ssl_context(), timeout=c.timeout_seconds,
                              headers=headers) as client:
            for start in range(0, len(texts), c.batch_size):
                vectors += await self._batch(client, texts[start:start + c.batch_size])
        return vectors

    async def _batch(self, client: HttpClient, texts: list[str]) -> list[list[float]]:
        c = self.config
        url = f"{self.base_url}/embeddings"
        body: dict[str, Any] = {"model": c.model, "input": texts}
        if c.dimensions is not None:
            body["dimensions"] = c.dimensions

        async def post() -> Response:
            try:
                response = await client.request("POST", url, json=body)
            except HttpError as exc:
                raise _TransientError(f"POST {url}: {type(exc).__name__}: {exc}") from exc
            if response.status_code >= 500 and _rate_limit(response) is None:
                raise _TransientError(self._masked(f"POST {url}: HTTP {response.status_code}: {response.text[:300]}"))
            return response

        async def attempt(_seconds_left: float) -> Response | EmbedderError:
            # Transport errors and 5xx are retried here; a rate limit is the limiter's to wait out.
            try:
                return await retry_on_exception(post, Backoff(attempts=c.retries + 1, backoff_seconds=0.2),
                                                lambda exc: isinstance(exc, _TransientError))
            except EmbedderError as exc:
                return exc

        def answer_of(result: Response | EmbedderError) -> tuple[RateLimitAnswer | None, str]:
            if isinstance(result, Response) and (limited := _rate_limit(result)) is not None:
                return limited, self._masked(f"POST {url}: HTTP {result.status_code}: {result.text[:300]}")
            return None, ""

        outcome = await call_within_limit(self._limiter, attempt, answer_of, timeout=c.timeout_seconds,
                                          retry=self._limiter.retry, tokens_of=_tokens)
        result = outcome.result
        if result is None or (isinstance(result, Response) and _rate_limit(result) is not None):
            last = answer_of(result)[1] if result is not None else f"not sent: {outcome.gave_up}"
            why = f"; {outcome.gave_up}" if outcome.gave_up and result is not None else ""
            raise EmbedderRateLimited(f"{last} (rate limited {outcome.rate_limited} time(s), {outcome.waited_s:.1f} s "
                                      f"waited on {self._limiter.label}{why})")
        if isinstance(result, EmbedderError):
            raise result
        if result.status_code >= 400:
            raise EmbedderError(self._masked(f"POST {url}: HTTP {result.status_code}: {result.text[:300]}"))
        try:
            return _parse(url, result, len(texts))
        except EmbedderError as exc:
            raise EmbedderError(self._masked(str(exc))) from exc

    def _masked(self, message: str) -> str:
        # Error messages land in results; a server that echoes the request must not leak the key.
        return message.replace(self._api_key, "***") if self._api_key else message


class _TransientError(EmbedderError):
    """A failure worth another attempt: no answer, or HTTP 5xx that is not a rate limit."""


def _rate_limit(response: Response) -> RateLimitAnswer | None:
    return rate_limit_of(response.status_code, response.headers, response.content)


def _tokens(result: Response | EmbedderError) -> int | None:
    """The tokens an answer reports it used (a pool's tokens_per_minute), None if not said."""
    if isinstance(result, EmbedderError) or result.status_code >= 400:
        return None
    try:
        usage = result.json().get("usage") or {}
        total = usage.get("total_tokens", usage.get("prompt_tokens"))
    except (ValueError, AttributeError):
        return None
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def _parse(url: str, response: Response, expected: int) -> list[list[float]]:
    try:
        data = response.json()["data"]
        # The spec orders by `index`; some servers do not, so sort rather than trust it.
        items = sorted(data, key=lambda item: item.get("index", 0))
        vectors = [[float(x) for x in item["embedding"]] for item in items]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EmbedderError(f"POST {url}: malformed embeddings answer ({type(exc).__name__}: {exc}): "
                            f"{response.text[:300]}") from exc
    if len(vectors) != expected:
        raise EmbedderError(f"POST {url}: asked for {expected} embeddings, got {len(vectors)}")
    return vectors
