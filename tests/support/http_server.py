"""The one HTTP server of the tests' fakes, on loopback.

- :func:`serve_http` / :func:`serving_http`: a raw server answering each request with the
  bytes the test gives, however wrong, which no real server would;
- :class:`ConnectionServer`: a fake that speaks HTTP/1.1 itself, connection by connection
  (keep-alive, chunked bodies held open, answers paced on an event), on its own thread and loop;
- :class:`HandlerServer` / :func:`serving_handler`: a fake written as a request handler
  (:class:`FakeHandler`: quiet, reads and answers JSON), served on its own thread.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOOPBACK = "127.0.0.1"

# A request's head (request line and headers, up to the blank line) -> the bytes to write
# back, or None to hold the connection open unanswered until the client closes it.
Answer = Callable[[str], "bytes | None"]
# What serves one connection, from its first byte until it closes (asyncio.start_server's callback).
Connection = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _answering(answer: Answer) -> Connection:
    """A connection handler answering every request on it with ``answer(head)``."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                reply = answer((await reader.readuntil(b"\r\n\r\n")).decode())
                if reply is None:
                    await reader.read()  # until the client gives up and closes
                    return
                writer.write(reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return handle


async def serve_connections(connection: Connection, tls: ssl.SSLContext | None = None
                            ) -> tuple[asyncio.Server, str]:
    """A server on 127.0.0.1 (a free port) serving every connection with ``connection`` (over
    TLS with ``tls``), and its base URL (``http(s)://127.0.0.1:PORT``). Use it with ``async with``."""
    server = await asyncio.start_server(connection, LOOPBACK, 0, ssl=tls)
    scheme = "https" if tls else "http"
    return server, f"{scheme}://{LOOPBACK}:{server.sockets[0].getsockname()[1]}"


async def serve_http(answer: Answer) -> tuple[asyncio.Server, str]:
    """A server on 127.0.0.1 (a free port) answering every request with ``answer(head)``,
    and its base URL (``http://127.0.0.1:PORT``). Use the server with ``async with``."""
    return await serve_connections(_answering(answer))


class ConnectionServer:
    """``connection`` serving every connection to 127.0.0.1 (a free port), on an event loop in
    a thread of its own, from construction until :meth:`close` (or the end of a ``with``
    block); ``url`` is its base URL. For a client in another thread or process."""

    def __init__(self, connection: Connection, name: str = "loopback-http") -> None:
        self._connection = connection
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        assert self._ready.wait(30), f"the {name} server did not start"
        self.url = f"http://{LOOPBACK}:{self.port}"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server, url = self._loop.run_until_complete(serve_connections(self._connection))
        self.port = port_of(url)
        self._ready.set()
        self._loop.run_forever()
        # The connections close() cancelled end, then the loop is closed: left open, it is
        # reported (ResourceWarning) in whichever later test collects it.
        if pending := asyncio.all_tasks(self._loop):
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    def close(self) -> None:
        """Stop listening, cancel the connections still open, and end the thread."""
        async def shut() -> None:
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)

    def __enter__(self) -> ConnectionServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def serving_http(answer: Answer) -> Iterator[str]:
    """:func:`serve_http` on its own thread and event loop, for a test whose client is another
    process (``evalh run``); yields the base URL, and stops the server on exit."""
    with ConnectionServer(_answering(answer)) as server:
        yield server.url


def port_of(url: str) -> int:
    """The port of a :func:`serve_http` URL."""
    return int(url.rsplit(":", 1)[1])


def free_port() -> int:
    """A loopback port nothing listens on (as the kernel picked it a moment ago)."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


class FakeHandler(BaseHTTPRequestHandler):
    """A fake's request handler: silent in the test output, with its JSON body read and its
    JSON answer written in one call each (``do_GET``/``do_POST`` are the fake's own)."""

    def log_message(self, *args: Any) -> None:
        pass  # a fake's access log would only clutter pytest's output

    def body_bytes(self) -> bytes:
        """The request body (by its Content-Length; none without one)."""
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def body_json(self) -> Any:
        """The request body, parsed as JSON."""
        return json.loads(self.body_bytes())

    def send_bytes(self, status: int, data: bytes, content_type: str = "application/json",
                   headers: Mapping[str, str] | None = None) -> None:
        """Answer ``status`` with ``data`` (and a Content-Length)."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        """Answer ``status`` with ``payload`` as JSON."""
        self.send_bytes(status, json.dumps(payload).encode(), headers=headers)


class HandlerServer:
    """``handler`` served on 127.0.0.1 (``port``, default a free one) by a threading server on
    its own thread, from construction until :meth:`close` (or the end of a ``with`` block);
    ``url`` is its base URL (``http://127.0.0.1:PORT``). Binding a taken port raises ``OSError``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        self._server = ThreadingHTTPServer((LOOPBACK, port), handler)
        self.url = f"http://{LOOPBACK}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01},
                                        name=f"fake-{handler.__name__}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> HandlerServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def serving_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """:class:`HandlerServer` for the block; yields its base URL."""
    with HandlerServer(handler) as server:
        yield server.url
