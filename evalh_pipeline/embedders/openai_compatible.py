"""``openai_compatible``: POST ``{base_url}/embeddings`` of any OpenAI-compatible server (common/http_client.py)."""

from __future__ import annotations

from pydantic import Field

from evalh_pipeline.embedders.base import Embedder, EmbedderConfigModel, EmbedderError
from evalh_pipeline.common.http_client import HttpClient, HttpError, Response
from evalh_pipeline.common.retrying import Backoff, retry_on_exception
from evalh_pipeline.common.tls import default_ssl_context

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAICompatibleConfig(EmbedderConfigModel):
    model: str = "text-embedding-3-small"
    # None: $OPENAI_BASE_URL, else the OpenAI API.
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    dimensions: int | None = Field(default=None, ge=1)
    batch_size: int = Field(default=256, ge=1)
    timeout_seconds: float = Field(default=30.0, gt=0)
    # Extra attempts after a transport error, a 429 or a 5xx.
    retries: int = Field(default=1, ge=0, le=10)


class OpenAICompatibleEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama,
    LM Studio, llama.cpp server, ...). Key and base URL are read from the environment when
    the evaluator is built; servers that need no key work without one."""

    Config = OpenAICompatibleConfig

    def __init__(self, type_name, config=None, env=None) -> None:
        super().__init__(type_name, config, env)
        c = self.config
        self.base_url = (c.base_url or self.env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = self.env.get(c.api_key_env) or None

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
        body: dict = {"model": c.model, "input": texts}
        if c.dimensions is not None:
            body["dimensions"] = c.dimensions

        async def attempt() -> list[list[float]]:
            try:
                response = await client.request("POST", url, json=body)
            except HttpError as exc:
                raise _TransientError(f"POST {url}: {type(exc).__name__}: {exc}") from exc
            if response.status_code < 400:
                try:
                    return _parse(url, response, len(texts))
                except EmbedderError as exc:
                    raise EmbedderError(self._masked(str(exc))) from exc
            message = self._masked(f"POST {url}: HTTP {response.status_code}: {response.text[:300]}")
            if response.status_code == 429 or response.status_code >= 500:
                raise _TransientError(message)
            raise EmbedderError(message)

        return await retry_on_exception(attempt, Backoff(attempts=c.retries + 1, backoff_seconds=0.2),
                                        lambda exc: isinstance(exc, _TransientError))

    def _masked(self, message: str) -> str:
        # Error messages land in results; a server that echoes the request must not leak the key.
        return message.replace(self._api_key, "***") if self._api_key else message


class _TransientError(EmbedderError):
    """A failure worth another attempt: no answer, HTTP 429 or 5xx."""


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
