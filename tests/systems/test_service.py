"""The service systems' healthcheck (systems/service.py) over the project's HTTP client,
against a raw server on 127.0.0.1: it waits for a 2xx, names the last answer or failure in
one line when it gives up, never goes through a proxy the environment names, and stops
waiting when the service exits."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from evalh_pipeline.models import RunVariant
from evalh_pipeline.systems.base import AdapterError, SystemContext
from evalh_pipeline.systems.service import ServiceConfig, ServiceSystem

pytestmark = pytest.mark.integration


class LocalService(ServiceSystem):
    """A "service" that is already listening on ``port`` (nothing to start or stop)."""

    Config = ServiceConfig
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


async def _serve(statuses: list[str], seen: list[str]):
    """A server answering each request with the next status of ``statuses`` (the last one
    repeated), keeping each request's first line in ``seen``."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode()
                seen.append(head.split("\r\n", 1)[0])
                status = statuses[min(len(seen), len(statuses)) - 1]
                writer.write(f"HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n".encode())
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_start_waits_until_the_healthcheck_answers_2xx(monkeypatch):
    # A proxy the environment names is never used for the service on loopback.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_free_port()}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    seen: list[str] = []

    async def go() -> None:
        server, port = await _serve(["503 Service Unavailable", "503 Service Unavailable", "204 No Content"], seen)
        async with server:
            service = _service(port, healthcheck="HEAD /ready")
            await service.start()
            await service.close()

    asyncio.run(go())
    assert seen == ["HEAD /ready HTTP/1.1"] * 3


def test_a_healthcheck_that_never_answers_2xx_fails_start_with_the_last_status():
    seen: list[str] = []

    async def go() -> str:
        server, port = await _serve(["500 Internal Server Error"], seen)
        async with server:
            with pytest.raises(AdapterError) as failure:
                await _service(port, timeout=0.3).start()
            return str(failure.value)

    message = asyncio.run(go())
    assert message.startswith("local_service: healthcheck GET /health did not answer 2xx within 0.3s "
                              "(last: HTTP 500); last output: ready?")
    assert "\n" not in message and seen[0] == "GET /health HTTP/1.1"


def test_a_service_nobody_listens_for_fails_start_naming_the_connect_error():
    with pytest.raises(AdapterError, match=r"^local_service: healthcheck GET /health did not answer 2xx within "
                                           r"0\.3s \(last: ConnectError: [^\n]+\); last output: ready\?$"):
        asyncio.run(_service(_free_port(), timeout=0.3).start())


def test_a_service_that_answers_something_not_http_is_named_in_one_line():
    async def go() -> str:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"not http\r\n\r\n")
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        async with server:
            with pytest.raises(AdapterError) as failure:
                await _service(server.sockets[0].getsockname()[1], timeout=0.3).start()
            return str(failure.value)

    message = asyncio.run(go())
    assert "(last: RemoteProtocolError: " in message and "\n" not in message


def test_a_service_that_exits_stops_the_wait_with_its_reason():
    service = _service(_free_port())
    service.exited = "exit code 3"
    with pytest.raises(AdapterError, match=r"the service stopped before its healthcheck GET /health passed: exit code 3"):
        asyncio.run(service.start())
