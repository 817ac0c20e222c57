"""An OpenAI-compatible chat completions server on loopback that rate-limits each API key.

Each key (the request's ``Authorization`` header) has a token bucket: ``rate`` requests per
second, ``burst`` at most at once (rate and burst 0: every request is refused), and with
``tokens_per_minute`` a token bucket as OpenAI keeps one (full at the start, a minute's worth;
a request is refused unless the bucket holds what it uses). A request beyond it
gets what OpenAI sends: HTTP 429 with ``retry-after`` (whole seconds), ``retry-after-ms``,
the ``x-ratelimit-*-requests`` headers and the ``rate_limit_exceeded`` error body, whose
message quotes the key's last four characters as OpenAI's does (so masking is tested).
An admitted request is answered after ``latency`` seconds with a ``chat.completion``
naming the user message (a request to ``.../embeddings``: an embeddings answer). The server counts, per key and in all, the requests (and when each
arrived), the 429s and the most requests it was answering at once (``stats``).
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from dataclasses import dataclass, field

from tests.support.http_server import ConnectionServer


@dataclass
class KeyLimit:
    """One key's limit: ``rate`` per second (0: none admitted), ``burst`` at once."""

    rate: float
    burst: float = 1.0
    # Seconds written as Retry-After instead of the bucket's own wait (a server asking for hours).
    retry_after: float | None = None
    tokens_per_minute: float | None = None


@dataclass
class KeyStats:
    """What one key (or all keys: ``total``) got."""

    requests: int = 0
    answered: int = 0
    rate_limited: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    arrivals: list[float] = field(default_factory=list)  # time.monotonic() of each request


@dataclass
class _TokenBucket:
    per_minute: float
    tokens: float
    at: float

    def take(self, now: float, used: int) -> float:
        """0 when ``used`` tokens were taken, else the seconds until they are there."""
        self.tokens = min(self.per_minute, self.tokens + (now - self.at) * self.per_minute / 60)
        self.at = now
        if self.tokens >= used:
            self.tokens -= used
            return 0.0
        return (used - self.tokens) * 60 / self.per_minute


@dataclass
class _Bucket:
    limit: KeyLimit
    tokens: float
    at: float

    def take(self, now: float) -> float:
        """0 when a token was taken, else the seconds until one is there."""
        self.tokens = min(self.limit.burst, self.tokens + (now - self.at) * self.limit.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return math.inf if self.limit.rate <= 0 else (1 - self.tokens) / self.limit.rate


@dataclass
class RateLimitedServer:
    """The server in a thread of its own: ``with RateLimitedServer({...}) as server: server.url``.

    ``limits``: key (the Authorization header value) -> its limit; other keys are not limited.
    """

    limits: dict[str, KeyLimit] = field(default_factory=dict)
    latency: float = 0.02
    usage: tuple[int, int] = (5, 3)  # the prompt and completion tokens each answer reports
    stats: dict[str, KeyStats] = field(default_factory=dict)
    total: KeyStats = field(default_factory=KeyStats)

    def __post_init__(self) -> None:
        self._buckets = {key: _Bucket(limit, limit.burst, time.monotonic()) for key, limit in self.limits.items()}
        self._token_buckets = {key: _TokenBucket(limit.tokens_per_minute, limit.tokens_per_minute, time.monotonic())
                               for key, limit in self.limits.items() if limit.tokens_per_minute}

    @property
    def url(self) -> str:
        """The chat completions endpoint."""
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def __enter__(self) -> RateLimitedServer:
        self._server = ConnectionServer(self._connection, name="rate-limited")
        self.port = self._server.port
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
                body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))) or b"{}")
                path = head[0].split(" ")[1] if head[0].count(" ") >= 2 else "/"
                writer.write(await self._answer(headers.get("authorization", ""), body, path))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _answer(self, key: str, body: dict, path: str = "/v1/chat/completions") -> bytes:
        stats = self.stats.setdefault(key, KeyStats())
        bucket = self._buckets.get(key)
        wait = bucket.take(time.monotonic()) if bucket is not None else 0.0
        tokens = self._token_buckets.get(key)
        if not wait and tokens is not None:
            wait = tokens.take(time.monotonic(), sum(self.usage))
        arrived = time.monotonic()
        for counted in (stats, self.total):
            counted.requests += 1
            counted.arrivals.append(arrived)
        if wait > 0:
            for counted in (stats, self.total):
                counted.rate_limited += 1
            return self._refusal(key, bucket.limit if bucket else None, wait)
        for counted in (stats, self.total):
            counted.in_flight += 1
            counted.peak_in_flight = max(counted.peak_in_flight, counted.in_flight)
        try:
            await asyncio.sleep(self.latency)
        finally:
            for counted in (stats, self.total):
                counted.in_flight -= 1
        for counted in (stats, self.total):
            counted.answered += 1
        if path.endswith("/embeddings"):
            return _response(200, "OK", {"content-type": "application/json"}, _embeddings(body, self.usage[0]))
        message = str(body.get("messages", [{}])[-1].get("content", ""))
        return _response(200, "OK", {"content-type": "application/json"}, {
            "id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model", "m"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": f"answer to {message}"}}],
            "usage": {"prompt_tokens": self.usage[0], "completion_tokens": self.usage[1],
                      "total_tokens": sum(self.usage)}})

    @staticmethod
    def _refusal(key: str, limit: KeyLimit | None, wait: float) -> bytes:
        asked = limit.retry_after if limit and limit.retry_after is not None else (1.0 if math.isinf(wait) else wait)
        rate = limit.rate if limit else 0
        headers = {"content-type": "application/json", "retry-after": str(max(1, math.ceil(asked))),
                   "retry-after-ms": str(round(asked * 1000)), "x-ratelimit-limit-requests": str(rate),
                   "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": f"{asked:.3f}s"}
        return _response(429, "Too Many Requests", headers, {"error": {
            "message": f"Rate limit reached for requests on key {key[-4:]!s} (full key {key}): "
                       f"Limit {rate}, Used {rate}, Requested 1. Please try again in {asked * 1000:.0f}ms.",
            "type": "requests", "param": None, "code": "rate_limit_exceeded"}})


def _embeddings(body: dict, tokens_per_text: int) -> dict:
    """An embeddings answer: per text, its length and its count of vowels (a vector a test can predict)."""
    texts = body.get("input") or []
    texts = [texts] if isinstance(texts, str) else texts
    return {"object": "list", "model": body.get("model", "m"),
            "data": [{"object": "embedding", "index": i, "embedding": [float(len(t)), float(sum(c in "aeiou" for c in t))]}
                     for i, t in enumerate(texts)],
            "usage": {"prompt_tokens": tokens_per_text * len(texts), "total_tokens": tokens_per_text * len(texts)}}


def _response(status: int, reason: str, headers: dict[str, str], payload: object) -> bytes:
    data = json.dumps(payload).encode()
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers.items()),
             f"content-length: {len(data)}", "connection: keep-alive"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data
