"""A raw HTTP server on loopback for tests of the project's HTTP clients: it answers each
request with the bytes the test gives, however wrong, which no real server would."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

LOOPBACK = "127.0.0.1"

# A request's head (request line and headers, up to the blank line) -> the bytes to write
# back, or None to hold the connection open unanswered until the client closes it.
Answer = Callable[[str], "bytes | None"]


async def serve_http(answer: Answer) -> tuple[asyncio.Server, str]:
    """A server on 127.0.0.1 (a free port) answering every request with ``answer(head)``,
    and its base URL (``http://127.0.0.1:PORT``). Use the server with ``async with``."""
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

    server = await asyncio.start_server(handle, LOOPBACK, 0)
    return server, f"http://{LOOPBACK}:{server.sockets[0].getsockname()[1]}"


@contextmanager
def serving_http(answer: Answer) -> Iterator[str]:
    """:func:`serve_http` on its own thread and event loop, for a test whose client is another
    process (``evalh run``); yields the base URL, and stops the server on exit."""
    loop = asyncio.new_event_loop()
    ready: list[tuple[asyncio.Server, str]] = []
    started = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        ready.append(loop.run_until_complete(serve_http(answer)))
        started.set()
        loop.run_forever()
        ready[0][0].close()
        loop.run_until_complete(ready[0][0].wait_closed())
        loop.close()

    thread = threading.Thread(target=serve, name="loopback-http", daemon=True)
    thread.start()
    started.wait()
    try:
        yield ready[0][1]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()


def port_of(url: str) -> int:
    """The port of a :func:`serve_http` URL."""
    return int(url.rsplit(":", 1)[1])


def free_port() -> int:
    """A loopback port nothing listens on (as the kernel picked it a moment ago)."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])
