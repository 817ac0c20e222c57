"""The one outbound HTTP client of the project (the ``http`` adapter, judges, embedders): aiohttp.

httpx's own transport costs 3.5-5 ms of CPU per streamed request at 200 concurrent
connections, httpx's API over an aiohttp pool about 2 ms, aiohttp alone 1.2-1.45 ms
(benchmarks/README.md, "HTTP client"); a run of thousands of streamed requests is bound by
that CPU on its one event loop. So every caller speaks to aiohttp through this module, which
pins down what the callers rely on:

- errors are this module's (:class:`HttpError` and its subclasses, named as httpx names them),
  so a timeout (:class:`TimeoutException`) is told apart from a refused connection, a dropped
  one or a malformed answer (:class:`TransportError`);
- redirects are never followed; a compressed body is decoded once (by aiohttp);
- proxies come from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``), but
  ``~/.netrc`` is never read: aiohttp's ``trust_env`` would add its credentials to every
  request (read in a worker thread per request) and break requests that carry their own
  ``Authorization`` header;
- TLS verifies with the context given (common/tls.py);
- a JSON body is encoded as httpx encodes it (compact, UTF-8, no NaN).

A client is bound to the event loop it was opened on (aiohttp binds its pool to the loop).
"""

from __future__ import annotations

import asyncio
import codecs
import json
import ssl
import urllib.request
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import aiohttp
from multidict import CIMultiDictProxy
from yarl import URL

from evalh_pipeline.errors import InfrastructureError


class HttpError(InfrastructureError):
    """Any failure to get an answer over HTTP (an HTTP error status is an answer, not this)."""


class TransportError(HttpError):
    """The connection failed: refused, dropped, reset, or the answer was not valid HTTP."""


class TimeoutException(TransportError):
    """No connection, or no data, within the client's timeout."""


class ConnectTimeout(TimeoutException):
    """No free connection or no connection made within the timeout."""


class ReadTimeout(TimeoutException):
    """The server sent nothing (head or body) for the timeout."""


class ConnectError(TransportError):
    """The connection could not be made: refused, unreachable, DNS, TLS handshake."""


class RemoteProtocolError(TransportError):
    """The server closed the connection early or answered something that is not HTTP."""


class ReadError(TransportError):
    """Any other failure of the connection (reset, broken pipe)."""


@contextmanager
def _mapped_errors() -> Iterator[None]:
    """aiohttp's exceptions raised as this module's."""
    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:  # waiting for a pool slot or connecting
        raise ConnectTimeout(str(exc) or type(exc).__name__) from exc
    except (TimeoutError, asyncio.TimeoutError) as exc:  # incl. aiohttp.SocketTimeoutError
        raise ReadTimeout(str(exc) or type(exc).__name__) from exc
    except aiohttp.ClientConnectorError as exc:  # refused, unreachable, DNS, TLS handshake
        raise ConnectError(str(exc)) from exc
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientResponseError) as exc:
        raise RemoteProtocolError(str(exc) or type(exc).__name__) from exc
    except aiohttp.ClientError as exc:  # any other failure of the connection (reset, broken pipe)
        raise ReadError(str(exc) or type(exc).__name__) from exc


def encode_json(value: Any) -> bytes:
    """A JSON request body as httpx 0.28 encodes one (so servers see the same bytes)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


class LineSplitter:
    """Splits a byte stream into lines ended by LF, CRLF or CR (as server-sent events and JSON
    lines define them), across chunk boundaries. Lines are returned without their ending."""

    def __init__(self) -> None:
        self._rest = b""
        self._after_cr = False  # the last chunk ended in CR: an LF first in the next is its pair

    def feed(self, data: bytes) -> list[bytes]:
        """The lines completed by ``data``."""
        if self._after_cr:
            self._after_cr = False
            if data[:1] == b"\n":
                data = data[1:]
        if self._rest:
            data = self._rest + data
        if b"\r" in data:
            if data[-1:] == b"\r":
                self._after_cr = True
                data = data[:-1] + b"\n"
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = data.split(b"\n")
        self._rest = lines.pop()
        return lines

    def end(self) -> list[bytes]:
        """The last line, when the stream ended without a line ending."""
        rest, self._rest = self._rest, b""
        return [rest] if rest else []


class Response:
    """A response whose head has arrived; the body is read through :meth:`iter_bytes`
    (with :class:`LineSplitter` for lines), :meth:`iter_text` or :meth:`read`, once."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status_code: int = response.status
        self.reason: str = response.reason or ""
        self.headers: CIMultiDictProxy[str] = response.headers
        self.content: bytes = b""  # after read()

    @property
    def encoding(self) -> str:
        """The body's text encoding: the Content-Type's charset, else UTF-8."""
        charset = self._response.charset
        if charset:
            try:
                return codecs.lookup(charset).name
            except LookupError:
                pass
        return "utf-8"

    async def iter_bytes(self) -> AsyncIterator[bytes]:
        """The (decompressed) body in the pieces it arrives in."""
        with _mapped_errors():
            async for chunk in self._response.content.iter_any():
                yield chunk

    async def iter_text(self) -> AsyncIterator[str]:
        """The body decoded as it arrives (undecodable bytes replaced)."""
        decoder = codecs.getincrementaldecoder(self.encoding)(errors="replace")
        async for chunk in self.iter_bytes():
            text = decoder.decode(chunk)
            if text:
                yield text
        text = decoder.decode(b"", final=True)
        if text:
            yield text

    async def read(self, cap: int | None = None) -> bytes | None:
        """The whole body (also kept in :attr:`content`), or None as soon as it grows past
        ``cap`` bytes (the rest is never read)."""
        declared = self.headers.get("Content-Length")
        if cap is not None and declared is not None and declared.isdigit() and int(declared) > cap:
            return None
        chunks = bytearray()
        async for chunk in self.iter_bytes():
            chunks += chunk
            if cap is not None and len(chunks) > cap:
                return None
        self.content = bytes(chunks)
        return self.content

    @property
    def text(self) -> str:
        """:attr:`content` decoded (undecodable bytes replaced)."""
        return self.content.decode(self.encoding, errors="replace")

    def json(self) -> Any:
        """:attr:`content` parsed as JSON (raises ``ValueError``)."""
        return json.loads(self.content)

    def close(self) -> None:
        """Hand the connection back: reusable when the body was read to its end, else closed."""
        self._response.release()


class HttpClient:
    """At most ``connections`` open connections (one aiohttp pool) to any hosts.

    ``headers`` go with every request (a request's own headers win); ``timeout`` bounds
    waiting for a connection, connecting, and each wait for data, not the whole request.
    ``env_proxies=False``: never through a proxy (a service on this host's loopback).
    Open it on the event loop that uses it; close it with :meth:`aclose` (or ``async with``).
    """

    def __init__(self, *, connections: int, tls: ssl.SSLContext, timeout: float,
                 headers: Mapping[str, str] | None = None, env_proxies: bool = True) -> None:
        self._proxies = urllib.request.getproxies_environment() if env_proxies else {}
        self._bypass: dict[str, bool] = {}
        self._headers = dict(headers or {})
        # The JSON content type, unless the caller's headers name one (as httpx does).
        self._json_headers = {} if any(k.lower() == "content-type" for k in self._headers) else {
            "Content-Type": "application/json"}
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout, sock_connect=timeout, sock_read=timeout)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max(1, connections), ssl=tls),
            headers=self._headers,
            trust_env=False,  # see the module docstring: proxies are read below, netrc never
            # Cookies a server sets are sent back on later requests, as httpx's clients did;
            # unsafe: also for servers named by IP address (127.0.0.1).
            cookie_jar=aiohttp.CookieJar(unsafe=True),
        )

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @asynccontextmanager
    async def stream(self, method: str, url: str | URL, *, headers: Mapping[str, str] | None = None,
                     json: Any = None) -> AsyncIterator[Response]:
        """A request whose response's body is read inside the block; the connection is
        handed back when the block ends. ``json`` (not None) is sent as a JSON body."""
        data = None
        if json is not None:
            data = encode_json(json)
            if not headers:
                headers = self._json_headers
            elif self._json_headers and not any(k.lower() == "content-type" for k in headers):
                headers = {**self._json_headers, **headers}
        target = url if isinstance(url, URL) else URL(url)
        with _mapped_errors():
            raw = await self._session.request(method, target, headers=headers, data=data, allow_redirects=False,
                                              proxy=self._proxy(target), timeout=self._timeout)
        response = Response(raw)
        try:
            yield response
        finally:
            response.close()

    async def request(self, method: str, url: str | URL, *, headers: Mapping[str, str] | None = None,
                      json: Any = None) -> Response:
        """A request whose whole response body is read (into :attr:`Response.content`)."""
        async with self.stream(method, url, headers=headers, json=json) as response:
            await response.read()
        return response

    def _proxy(self, url: URL) -> str | None:
        """The proxy the environment names for ``url`` (None: straight to the host)."""
        proxy = self._proxies.get(url.scheme)
        if proxy is None:
            return None
        host = url.host or ""
        bypass = self._bypass.get(host)
        if bypass is None:
            # NO_PROXY as urllib reads it (a public function typeshed does not declare).
            bypass = self._bypass[host] = bool(
                urllib.request.proxy_bypass_environment(host, self._proxies))  # type: ignore[attr-defined]
        return None if bypass else proxy

    async def aclose(self) -> None:
        """Close every connection."""
        await self._session.close()
