"""The ``http`` adapter's wire: httpx's client API over aiohttp's connection pool.

httpx's own transport (httpcore, h11, anyio) costs 3.5-5 ms of CPU per streamed request at
200 concurrent connections, aiohttp about 1.3 ms (benchmarks/README.md, "HTTP client"), and a
run of thousands of streamed requests is bound by that CPU on its one event loop. So the
adapter keeps httpx's requests, responses, streaming and errors (everything above the
wire) and sends through one aiohttp connection pool sized to the run's concurrency.

aiohttp's errors are mapped to httpx's, so the adapter tells them apart as before: a timeout
is a ``timeout``; a refused connection, a dropped one or a malformed answer is a transport error.
Neither redirects nor content decoding happen here: httpx does both, as with its own transport.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import aiohttp
import httpx


@contextmanager
def _as_httpx_errors(request: httpx.Request, connecting: bool) -> Iterator[None]:
    """aiohttp's exceptions raised as the httpx exceptions httpx's own transport raises."""
    try:
        yield
    except (TimeoutError, asyncio.TimeoutError, aiohttp.ServerTimeoutError) as exc:
        kind = httpx.ConnectTimeout if connecting else httpx.ReadTimeout
        raise kind(str(exc) or type(exc).__name__, request=request) from exc
    except aiohttp.ClientConnectorError as exc:  # refused, unreachable, DNS, TLS handshake
        raise httpx.ConnectError(str(exc), request=request) from exc
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientResponseError) as exc:
        raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request) from exc
    except aiohttp.ClientError as exc:  # any other failure of the connection (reset, broken pipe)
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc


class _Body(httpx.AsyncByteStream):
    """The response body as aiohttp receives it; closing it hands the connection back."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors(self._request, connecting=False):
            async for chunk in self._response.content.iter_any():
                yield chunk

    async def aclose(self) -> None:
        # A body read to its end leaves the connection reusable; one cut short closes it.
        self._response.release()


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport with at most ``connections`` open connections (one aiohttp pool).

    Create and use it on one running event loop (aiohttp binds its pool to the loop).
    Proxies come from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``), as
    httpx's do. aiohttp's own ``trust_env`` is left off: besides proxies it adds credentials
    from ``~/.netrc`` to every request (read in a worker thread per request), and a request
    that carries its own ``Authorization`` header then fails outright.
    """

    def __init__(self, connections: int, tls: ssl.SSLContext) -> None:
        self._proxies = urllib.request.getproxies_environment()
        self._bypass: dict[str, bool] = {}
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max(1, connections), ssl=tls),
            trust_env=False,
            auto_decompress=False,  # httpx decodes the body by its Content-Encoding
            cookie_jar=aiohttp.DummyCookieJar(),  # httpx keeps the cookies, as with its own transport
            skip_auto_headers=("User-Agent", "Accept-Encoding", "Content-Type"),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        body = await request.aread()
        with _as_httpx_errors(request, connecting=True):
            response = await self._session.request(
                request.method,
                str(request.url),
                # As httpx sends them: names in the case they were given (multi_items lowercases).
                headers=[(name.decode("latin-1"), value.decode("latin-1")) for name, value in request.headers.raw],
                data=body or None,
                allow_redirects=False,
                proxy=self._proxy(request.url),
                timeout=aiohttp.ClientTimeout(total=None, connect=timeout.get("pool"),
                                              sock_connect=timeout.get("connect"),
                                              sock_read=timeout.get("read")),
            )
        return httpx.Response(
            status_code=response.status,
            headers=list(response.raw_headers),
            stream=_Body(response, request),
            request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (response.reason or "").encode()},
        )

    def _proxy(self, url: httpx.URL) -> str | None:
        """The proxy the environment names for ``url`` (None: straight to the host)."""
        proxy = self._proxies.get(url.scheme)
        if proxy is None:
            return None
        bypass = self._bypass.get(url.host)
        if bypass is None:
            bypass = self._bypass[url.host] = bool(urllib.request.proxy_bypass_environment(url.host, self._proxies))
        return None if bypass else proxy

    async def aclose(self) -> None:
        await self._session.close()
