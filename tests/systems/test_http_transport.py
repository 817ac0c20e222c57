"""http_transport: httpx's API over aiohttp's wire raises what httpx's own transport raises,
and hands httpx the body as sent (httpx decodes it), against raw servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gzip
import socket

import httpx
import pytest

from evalh_pipeline.common.tls import default_ssl_context
from evalh_pipeline.systems.http_transport import AiohttpTransport

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _serve(reply: bytes | None, *, stall: bool = False, seen: list[bytes] | None = None):
    """A server that reads a request (its head kept in ``seen``), then sends ``reply`` (or
    nothing) and closes, or stalls."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if seen is not None:
            seen.append(head)
        if reply is not None:
            writer.write(reply)
            await writer.drain()
        if stall:
            await asyncio.sleep(30)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"


async def _get(url: str, timeout: float = 5.0) -> httpx.Response:
    async with httpx.AsyncClient(transport=AiohttpTransport(2, default_ssl_context()),
                                 timeout=httpx.Timeout(timeout)) as client:
        response = await client.get(url)
        await response.aread()
        return response


def test_a_refused_connection_is_a_connect_error():
    with pytest.raises(httpx.ConnectError):
        asyncio.run(_get(f"http://127.0.0.1:{_free_port()}/"))


def test_a_server_that_closes_without_answering_is_a_protocol_error_not_a_timeout():
    async def go():
        server, url = await _serve(None)
        async with server:
            return await _get(url)

    with pytest.raises(httpx.TransportError) as raised:
        asyncio.run(go())
    assert not isinstance(raised.value, httpx.TimeoutException)


def test_a_body_that_stops_coming_is_a_read_timeout():
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"

    async def go():
        server, url = await _serve(head, stall=True)
        async with server:
            return await _get(url, timeout=0.5)

    with pytest.raises(httpx.ReadTimeout):
        asyncio.run(go())


def test_a_gzip_body_is_decoded_once_by_httpx():
    body = gzip.compress(b'{"answer": "Paris"}')
    reply = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
             b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    async def go():
        server, url = await _serve(reply)
        async with server:
            return await _get(url)

    response = asyncio.run(go())
    assert response.status_code == 200 and response.json() == {"answer": "Paris"}


def test_a_netrc_entry_for_the_host_neither_breaks_nor_replaces_the_requests_own_authorization(
        tmp_path, monkeypatch):
    (tmp_path / ".netrc").write_text("machine 127.0.0.1 login someone password from-netrc\n")
    (tmp_path / ".netrc").chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / ".netrc"))
    seen: list[bytes] = []

    async def go():
        server, url = await _serve(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", seen=seen)
        async with server, httpx.AsyncClient(transport=AiohttpTransport(2, default_ssl_context())) as client:
            return await client.get(url, headers={"Authorization": "Bearer from-eval"})

    response = asyncio.run(go())
    assert response.status_code == 200 and response.text == "ok"
    assert b"Authorization: Bearer from-eval" in seen[0] and b"Basic" not in seen[0]


def test_requests_go_through_the_proxy_the_environment_names(monkeypatch):
    seen: list[bytes] = []

    async def go():
        server, proxy_url = await _serve(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nproxied", seen=seen)
        monkeypatch.setenv("HTTP_PROXY", proxy_url.rstrip("/"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        async with server, httpx.AsyncClient(transport=AiohttpTransport(2, default_ssl_context())) as client:
            return await client.get("http://evalh-target.invalid/path")

    response = asyncio.run(go())
    assert response.text == "proxied"
    assert seen[0].startswith(b"GET http://evalh-target.invalid/path HTTP/1.1")
