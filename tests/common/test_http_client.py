"""http_client: the project's one outbound HTTP client (aiohttp) tells timeouts from
connection failures, decodes a body once, keeps a request's own headers, takes proxies
from the environment and never follows redirects, against raw servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gzip
import shutil
import ssl
import subprocess

import pytest

from evalh_pipeline.common.http_client import (
    ConnectError,
    ConnectTimeout,
    HttpClient,
    LineSplitter,
    ReadTimeout,
    Response,
    TimeoutException,
    TransportError,
)
from evalh_pipeline.common.tls import default_ssl_context
from tests.support.http_server import free_port, serve_connections

pytestmark = pytest.mark.integration


async def _serve(reply: bytes | None, *, stall: bool = False, seen: list[bytes] | None = None,
                 body: bool = False):
    """A server that reads a request (its head, and with ``body`` its body, kept in
    ``seen``), then sends ``reply`` (or nothing) and closes, or stalls."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if seen is not None:
            seen.append(head)
            if body:
                length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                seen.append(await reader.readexactly(length))
        if reply is not None:
            writer.write(reply)
            await writer.drain()
        if stall:
            await asyncio.sleep(30)
        writer.close()

    server, url = await serve_connections(handle)
    return server, url + "/"


def _client(timeout: float = 30.0) -> HttpClient:
    return HttpClient(connections=2, tls=default_ssl_context(), timeout=timeout)


async def _get(url: str, timeout: float = 30.0, headers: dict[str, str] | None = None) -> Response:
    async with _client(timeout) as client:
        return await client.request("GET", url, headers=headers)


def test_a_refused_connection_is_a_connect_error():
    with pytest.raises(ConnectError):
        asyncio.run(_get(f"http://127.0.0.1:{free_port()}/"))


def test_a_server_that_closes_without_answering_is_a_protocol_error_not_a_timeout():
    async def go():
        server, url = await _serve(None)
        async with server:
            return await _get(url)

    with pytest.raises(TransportError) as raised:
        asyncio.run(go())
    assert not isinstance(raised.value, TimeoutException)


def test_a_body_that_stops_coming_is_a_read_timeout():
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"

    async def go():
        server, url = await _serve(head, stall=True)
        async with server:
            return await _get(url, timeout=0.5)

    with pytest.raises(ReadTimeout):
        asyncio.run(go())


def test_a_gzip_body_is_decoded_once():
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
        async with server:
            return await _get(url, headers={"Authorization": "Bearer from-eval"})

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
        async with server:
            return await _get("http://evalh-target.invalid/path")

    response = asyncio.run(go())
    assert response.text == "proxied"
    assert seen[0].startswith(b"GET http://evalh-target.invalid/path HTTP/1.1")


def test_a_server_that_takes_the_request_and_never_answers_is_a_read_timeout_not_a_connect_one():
    async def go():
        server, url = await _serve(None, stall=True)
        async with server:
            return await _get(url, timeout=0.5)

    with pytest.raises(ReadTimeout):
        asyncio.run(go())


def test_waiting_for_a_connection_of_a_full_pool_is_a_connect_timeout():
    async def go():
        server, url = await _serve(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial", stall=True)
        async with server, HttpClient(connections=1, tls=default_ssl_context(), timeout=0.5) as client:
            async with client.stream("GET", url):  # holds the pool's one connection
                await client.request("GET", url)

    with pytest.raises(ConnectTimeout):
        asyncio.run(go())


def test_a_redirect_is_returned_not_followed():
    reply = b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/elsewhere\r\nContent-Length: 0\r\n\r\n"

    async def go():
        server, url = await _serve(reply)
        async with server:
            return await _get(url)

    response = asyncio.run(go())
    assert response.status_code == 302 and response.headers["location"].endswith("/elsewhere")


def test_a_cookie_the_server_sets_goes_back_with_the_next_request_of_the_client():
    seen: list[bytes] = []
    reply = b"HTTP/1.1 200 OK\r\nSet-Cookie: session=abc; Path=/\r\nContent-Length: 2\r\n\r\nok"

    async def go():
        server, url = await _serve(reply, seen=seen)
        async with server, _client() as client:
            await client.request("GET", url)
            await client.request("GET", url)

    asyncio.run(go())
    assert b"session=abc" not in seen[0] and b"Cookie: session=abc" in seen[1]


def test_a_json_body_is_sent_compact_in_utf8_with_its_content_type():
    seen: list[bytes] = []

    async def go():
        server, url = await _serve(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", seen=seen, body=True)
        async with server, _client() as client:
            await client.request("POST", url, json={"q": "café", "n": [1, 2]})

    asyncio.run(go())
    head, body = seen
    assert b"Content-Type: application/json" in head
    assert body == '{"q":"café","n":[1,2]}'.encode()


def test_a_text_body_is_decoded_by_its_charset():
    body = "prix: 12 €".encode("iso-8859-15")
    reply = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=iso-8859-15\r\n"
             b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    async def go():
        server, url = await _serve(reply)
        async with server:
            return await _get(url)

    assert asyncio.run(go()).text == "prix: 12 €"


@pytest.mark.parametrize("pieces", [
    [b"a\nb\r\nc\rd\n"],
    [b"a\n", b"b\r", b"\nc\r", b"d\n"],
    [b"a", b"\nb\r\n", b"c", b"\r", b"d", b"\n"],
])
def test_lines_end_at_lf_crlf_or_cr_wherever_the_chunks_split(pieces):
    splitter = LineSplitter()
    lines = [line for piece in pieces for line in splitter.feed(piece)] + splitter.end()
    assert lines == [b"a", b"b", b"c", b"d"]


def test_a_last_line_without_its_ending_is_given_at_the_end():
    splitter = LineSplitter()
    assert splitter.feed(b"data: 1\n\ndata: [DONE]") == [b"data: 1", b""]
    assert splitter.end() == [b"data: [DONE]"]


@pytest.fixture
def self_signed(tmp_path):
    """(certificate, key) for 127.0.0.1, made by the openssl command."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def _https_get(cert, key, client_tls: ssl.SSLContext):
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecure")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # the client refused the certificate
        writer.close()

    async def go():
        server, url = await serve_connections(handle, server_tls)
        url += "/"
        async with server, HttpClient(connections=1, tls=client_tls, timeout=30) as client:
            return await client.request("GET", url)

    return asyncio.run(go())


def test_https_verifies_the_server_certificate_with_the_context_given(self_signed):
    cert, key = self_signed
    with pytest.raises(ConnectError, match="certificate"):
        _https_get(cert, key, default_ssl_context())
    trusting = ssl.create_default_context(cafile=str(cert))
    assert _https_get(cert, key, trusting).text == "secure"
