"""The service systems' healthcheck (systems/service.py) over the project's HTTP client,
against a raw server on 127.0.0.1: it waits for a 2xx, names the last answer or failure in
one line when it gives up, never goes through a proxy the environment names, and stops
waiting when the service exits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evalh_pipeline.models import RunVariant
from evalh_pipeline.systems.base import AdapterError, SystemContext
from evalh_pipeline.systems.service import ServiceConfig, ServiceSystem
from tests.support.http_server import Answer, free_port, port_of, serve_http

pytestmark = pytest.mark.integration


class LocalService(ServiceSystem[ServiceConfig]):
    """A "service" that is already listening on ``port`` (nothing to start or stop)."""

    port = 0
    exited: str | None = None

    async def _start_service(self) -> int:
        return self.port

    async def _stop_service(self) -> None:
        pass

    async def _exited(self) -> str | None:
        return self.exited

    async def _last_output(self) -> str:
        return "last output: ready?"


def _service(port: int, *, timeout: float = 600, healthcheck: str = "GET /health") -> LocalService:
    variant = RunVariant(name="svc", adapter="local_service", config={
        "healthcheck": healthcheck, "healthcheck_timeout_seconds": timeout,
        "inner_adapter": "http", "inner_config": {"endpoint": "http://127.0.0.1:{port}/run"}})
    service = LocalService(variant, SystemContext(eval_dir=Path(".")))
    service.port = port
    return service


def _statuses(statuses: list[str], seen: list[str]) -> Answer:
    """Each request answered with the next status of ``statuses`` (the last one repeated),
    its first line kept in ``seen``."""
    def answer(head: str) -> bytes:
        seen.append(head.split("\r\n", 1)[0])
        status = statuses[min(len(seen), len(statuses)) - 1]
        return f"HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n".encode()

    return answer


def test_start_waits_until_the_healthcheck_answers_2xx(monkeypatch):
    # A proxy the environment names is never used for the service on loopback.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    seen: list[str] = []

    async def go() -> None:
        answer = _statuses(["503 Service Unavailable", "503 Service Unavailable", "204 No Content"], seen)
        server, url = await serve_http(answer)
        async with server:
            service = _service(port_of(url), healthcheck="HEAD /ready")
            await service.start()
            await service.close()

    asyncio.run(go())
    assert seen == ["HEAD /ready HTTP/1.1"] * 3


def test_a_healthcheck_that_never_answers_2xx_fails_start_with_the_last_status():
    seen: list[str] = []

    async def go() -> str:
        server, url = await serve_http(_statuses(["500 Internal Server Error"], seen))
        async with server:
            with pytest.raises(AdapterError) as failure:
                await _service(port_of(url), timeout=0.3).start()
            return str(failure.value)

    message = asyncio.run(go())
    assert message.startswith("local_service: healthcheck GET /health did not answer 2xx within 0.3s "
                              "(last: HTTP 500); last output: ready?")
    assert "\n" not in message and seen[0] == "GET /health HTTP/1.1"


def test_a_service_nobody_listens_for_fails_start_naming_the_connect_error():
    with pytest.raises(AdapterError, match=r"^local_service: healthcheck GET /health did not answer 2xx within "
                                           r"0\.3s \(last: ConnectError: [^\n]+\); last output: ready\?$"):
        asyncio.run(_service(free_port(), timeout=0.3).start())


def test_a_service_that_answers_something_not_http_is_named_in_one_line():
    async def go() -> str:
        server, url = await serve_http(lambda head: b"not http\r\n\r\n")
        async with server:
            with pytest.raises(AdapterError) as failure:
                await _service(port_of(url), timeout=0.3).start()
            return str(failure.value)

    message = asyncio.run(go())
    assert "(last: RemoteProtocolError: " in message and "\n" not in message


def test_a_service_that_exits_stops_the_wait_with_its_reason():
    service = _service(free_port())
    service.exited = "exit code 3"
    with pytest.raises(AdapterError, match=r"the service stopped before its healthcheck GET /health passed: exit code 3"):
        asyncio.run(service.start())
