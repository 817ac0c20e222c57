"""http: how streamed requests use their connections, against a keep-alive HTTP/1.1 server on 127.0.0.1.

The server answers OpenAI-style chat completion chunks with chunked transfer encoding and
keeps each connection open, as providers do; it counts the connections it was given.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.systems.base import SystemContext
from evalh_pipeline.systems.http import HttpSystem
from tests.support.http_server import ConnectionServer

pytestmark = pytest.mark.integration

ANSWER = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Paris"}}]}


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class KeepAliveServer:
    """A streaming chat endpoint in a thread of its own. What a request gets depends on its
    user message: ``slow`` waits until ``release_after`` other answers went out, ``hold``
    sends its answer and ``[DONE]`` and then never ends the body; anything else is answered at once."""

    def __init__(self, release_after: int = 0) -> None:
        self.connections = 0
        self.answered = 0
        self.release_after = release_after
        self._released = asyncio.Event()  # bound to the server's loop when first awaited there
        self._server = ConnectionServer(self._connection, name="keep-alive")
        self.url = self._server.url + "/v1/chat/completions"

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                body = json.loads(await reader.readexactly(length))
                message = body["messages"][-1]["content"]
                if message == "slow":
                    await self._released.wait()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n")
                writer.write(_chunk(f"data: {json.dumps(ANSWER)}\n\n".encode()) + _chunk(b"data: [DONE]\n\n"))
                if message == "hold":
                    await writer.drain()
                    await asyncio.Event().wait()  # the body never ends; the client must cut it
                writer.write(b"0\r\n\r\n")
                await writer.drain()
                if message != "slow":
                    self.answered += 1
                    if self.answered >= self.release_after:
                        self._released.set()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def server_factory():
    made: list[KeepAliveServer] = []

    def make(**kwargs) -> KeepAliveServer:
        made.append(KeepAliveServer(**kwargs))
        return made[-1]

    yield make
    for server in made:
        server.close()


def _system(url: str, concurrency: int) -> HttpSystem:
    variant = RunVariant(name="v1", adapter="http",
                         config={"endpoint": url, "provider": "openai_chat", "model": "m", "stream": True,
                                 "timeout_seconds": 60})
    return HttpSystem(variant, SystemContext(eval_dir=".", max_concurrency=concurrency))


def _case(i: int, message: str) -> EvalCase:
    return EvalCase(id=f"c{i}", input={"user_message": message})


def test_a_streamed_answer_read_to_its_end_leaves_the_connection_for_the_next_request(server_factory):
    server = server_factory()

    async def go():
        system = _system(server.url, concurrency=1)
        await system.start()
        try:
            return [await system.run(_case(i, "hello"), None) for i in range(5)]
        finally:
            await system.close()

    answers = asyncio.run(go())
    assert [a.output.final_answer for a in answers] == ["Paris"] * 5
    assert all(a.metrics.stream_completed for a in answers)
    assert server.connections == 1


def test_a_body_held_open_after_the_done_marker_is_cut_and_the_answer_kept(server_factory):
    server = server_factory()

    async def go():
        system = _system(server.url, concurrency=1)
        await system.start()
        try:
            return await system.run(_case(0, "hold"), None), await system.run(_case(1, "hello"), None)
        finally:
            await system.close()

    held, after = asyncio.run(go())
    assert held.output.final_answer == "Paris" and held.metrics.stream_completed
    assert after.output.final_answer == "Paris"
    assert server.connections == 2  # the held connection was closed, not reused


def test_a_request_takes_a_free_connection_while_others_wait_on_slow_answers(server_factory):
    # Eight connections, half of them waiting on slow answers. The slow requests are answered
    # only after eight others were: that happens only if no request queues behind them while
    # connections are free.
    half = 4
    server = server_factory(release_after=2 * half)

    async def go():
        system = _system(server.url, concurrency=2 * half)
        await system.start()
        try:
            # Slow and fast requests in turn, each started before the next, so that a pool
            # handed out in turn would give every slow request the same connections.
            first = []
            for i in range(2 * half):
                first.append(asyncio.ensure_future(system.run(_case(i, "fast" if i % 2 else "slow"), None)))
                await asyncio.sleep(0)
            slow, fast = first[0::2], first[1::2]
            answers = await asyncio.gather(*fast)
            more = [_case(100 + i, "fast") for i in range(half)]
            # A generous bound: without a free connection taken, this never completes.
            answers += await asyncio.wait_for(asyncio.gather(*(system.run(c, None) for c in more)), 120)
            answers += await asyncio.wait_for(asyncio.gather(*slow), 120)
            return answers
        finally:
            await system.close()

    answers = asyncio.run(go())
    assert len(answers) == 2 * half + half
    assert all(a.output.final_answer == "Paris" for a in answers)
