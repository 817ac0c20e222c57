"""http: which answers are rate limits (`rate_limited`, with the wait the server asked for),
against a raw loopback server that answers exactly the bytes given."""

from __future__ import annotations

import asyncio
import json

import pytest

from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.systems.base import AdapterError, SystemContext
from evalh_pipeline.systems.http import HttpSystem
from tests.support.http_server import serve_http

pytestmark = pytest.mark.integration

CASE = EvalCase(id="c1", input={"user_message": "hello"})


def _reply(status: str, headers: dict[str, str], body: dict) -> bytes:
    data = json.dumps(body).encode()
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers.items()), "content-type: application/json",
             f"content-length: {len(data)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


def _error_of(reply: bytes, headers: dict[str, str] | None = None) -> AdapterError:
    async def go() -> AdapterError:
        server, url = await serve_http(lambda head: reply)
        async with server:
            variant = RunVariant(name="v", adapter="http", config={
                "endpoint": f"{url}/v1/chat/completions", "provider": "openai_chat", "model": "m",
                "headers": headers or {}})
            system = HttpSystem(variant, SystemContext(eval_dir=".", secret_values=frozenset({"sk-secret-1"})))
            await system.start()
            try:
                with pytest.raises(AdapterError) as info:
                    await system.run(CASE, None)
                return info.value
            finally:
                await system.close()

    return asyncio.run(go())


def test_a_429_with_openais_body_is_rate_limited_with_its_retry_after_and_the_key_masked():
    error = _error_of(_reply("429 Too Many Requests", {"retry-after": "2", "retry-after-ms": "1500"}, {
        "error": {"message": "Rate limit reached for key sk-secret-1", "type": "requests",
                  "code": "rate_limit_exceeded"}}))
    assert error.type == "rate_limited" and error.retry_after == 1.5
    assert "sk-secret-1" not in str(error) and "Rate limit reached" in str(error)


def test_a_503_with_retry_after_as_an_http_date_is_rate_limited():
    error = _error_of(_reply("503 Service Unavailable", {"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"}, {}))
    assert error.type == "rate_limited" and error.retry_after > 3600


def test_a_503_without_retry_after_stays_a_server_error():
    assert _error_of(_reply("503 Service Unavailable", {}, {"error": "down"})).type == "http_5xx"


def test_anthropics_rate_limit_error_body_is_rate_limited_with_its_reset_time():
    error = _error_of(_reply("429 Too Many Requests", {"anthropic-ratelimit-requests-remaining": "0",
                                                       "anthropic-ratelimit-requests-reset": "2099-01-01T00:00:00Z"},
                             {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}))
    assert error.type == "rate_limited" and error.retry_after > 3600


def test_the_scope_of_a_system_is_its_endpoint_and_credential_headers_only():
    async def go():
        variant = RunVariant(name="v", adapter="http", config={
            "endpoint": "https://api.example.com/v1/chat/completions?key=abc", "provider": "openai_chat", "model": "m",
            "headers": {"Authorization": "Bearer sk-1", "X-Trace": "t1"}})
        system = HttpSystem(variant, SystemContext(eval_dir="."))
        await system.start()
        try:
            return system.rate_limit_scope()
        finally:
            await system.close()

    url, credential = asyncio.run(go())
    assert url.startswith("https://api.example.com/") and "authorization=Bearer sk-1" in credential
    assert "?key=abc" in credential and "t1" not in credential
