"""A local OpenAI-compatible chat completions server that streams (SSE) after a lognormal latency.

    python benchmarks/sse_server.py [--port 0]     # prints the port it listens on, then serves
    python benchmarks/sse_server.py --rate 40 --key-rate "Bearer k2=60"   # a rate limit per API key
    python benchmarks/sse_server.py --latency 0    # every stream at once (cell_instructions.py)

``POST /v1/chat/completions`` answers every request with a ``text/event-stream`` of
``chat.completion.chunk`` events (chunked transfer encoding, keep-alive): the role chunk at
once, then, after the request's latency, the answer in word-sized content chunks, a tool
call, the finish chunk, a usage chunk and ``data: [DONE]``. The latency is a function of
the last message's content only (:func:`latency_for`: lognormal, median 0.8 s, p95 3 s,
capped at 6 s, from a SHA-256 of the text), so every tool, and the ideal schedule
benchmarks/http_bench.py computes, sees the same latency for the same case. A request
without ``"stream": true`` gets the same answer as one ``chat.completion`` JSON body after
its latency (promptfoo's openai provider does not stream).

The server is built to cost little per request (an ``asyncio.Protocol``, uvloop when
installed, one timer and two writes per request) and measures itself: ``GET /stats``
returns the requests it saw, how late each stream's end went out against its due time
(arrival + latency), the most streams open at once, and its own CPU time; ``GET /reset``
zeroes them. It imports nothing from the project.

With ``--rate R`` (and ``--key-rate KEY=R`` for a key of its own), each API key (the
``Authorization`` header) has a token bucket of R requests per second and ``--burst`` at
once; a request beyond it is answered at once as OpenAI answers one: HTTP 429 with
``retry-after`` (whole seconds), ``retry-after-ms``, ``x-ratelimit-*-requests`` and the
``rate_limit_exceeded`` error body. ``/stats`` then counts the 429s and, per key, the
requests admitted and the first and last admission times.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import re
import resource
import statistics
import time
from statistics import NormalDist

MEDIAN_S = 0.8
P95_S = 3.0
CAP_S = 6.0
SIGMA = math.log(P95_S / MEDIAN_S) / NormalDist().inv_cdf(0.95)
_NORMAL = NormalDist()
SUBURBS = ("Richmond", "Brunswick", "Carlton", "Fitzroy")
_LISTING = re.compile(r"\bL\d+\b")


def latency_for(message: str) -> float:
    """The request's latency in seconds: lognormal (median 0.8 s, p95 3 s) capped at 6 s,
    from the SHA-256 of ``message`` mapped to a uniform quantile."""
    digest = hashlib.sha256(message.encode()).digest()
    quantile = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
    return min(CAP_S, MEDIAN_S * math.exp(SIGMA * _NORMAL.inv_cdf(quantile)))


def _event(payload: object) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def _chunked(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def stream_events(message: str, model: str) -> tuple[bytes, bytes]:
    """(the role chunk sent at once, everything sent after the latency), as SSE events."""
    listing = _LISTING.search(message)
    listing_id = listing.group(0) if listing else "unknown"
    suburb = next((s for s in SUBURBS if s in message), "Nowhere")
    base = {"id": f"chatcmpl-{listing_id}", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        return _event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    first = chunk({"role": "assistant", "content": ""})
    words = f"Listing {listing_id} is in {suburb}; the suburb average is 1.2M.".split(" ")
    rest = [chunk({"content": word if i == 0 else " " + word}) for i, word in enumerate(words)]
    rest.append(chunk({"tool_calls": [{"index": 0, "id": "call_0", "type": "function", "function": {
        "name": "get_listing_details", "arguments": json.dumps({"listing_id": listing_id})}}]}))
    rest.append(chunk({}, "stop"))
    rest.append(_event({**base, "choices": [], "usage": {
        "prompt_tokens": 12, "completion_tokens": len(words), "total_tokens": 12 + len(words)}}))
    rest.append(b"data: [DONE]\n\n")
    return first, b"".join(rest)


def completion(message: str, model: str) -> dict:
    """The same answer as :func:`stream_events`, as one ``chat.completion`` (a request without ``stream``)."""
    listing = _LISTING.search(message)
    listing_id = listing.group(0) if listing else "unknown"
    suburb = next((s for s in SUBURBS if s in message), "Nowhere")
    content = f"Listing {listing_id} is in {suburb}; the suburb average is 1.2M."
    return {"id": f"chatcmpl-{listing_id}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": len(content.split(" ")),
                      "total_tokens": 12 + len(content.split(" "))}}


class Bucket:
    """One key's token bucket: ``rate`` requests a second, ``burst`` at once."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self.at = burst, time.monotonic()

    def take(self, now: float) -> float:
        """0 when a token was taken, else the seconds until one is there."""
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


LIMITS: dict[str, float] = {}  # key -> rate (--key-rate); other keys get DEFAULT_RATE
DEFAULT_RATE: float | None = None
FIXED_LATENCY: float | None = None  # --latency: every request waits this long instead
BURST = 2.0


class Stats:
    """What the server measures about itself since the last reset."""

    def __init__(self) -> None:
        self.buckets: dict[str, Bucket] = {}
        self.rate_limited = 0
        self.keys: dict[str, dict] = {}  # key -> admitted, rate_limited, first and last admission
        self.requests = 0
        self.completed = 0
        self.aborted = 0
        self.open = 0
        self.max_open = 0
        self.lateness: list[float] = []  # seconds between a stream's due end and its last write
        self.busy = 0.0  # the sum of the streams' durations (arrival to last write)
        self.first_arrival: float | None = None
        self.last_end: float | None = None
        self.cpu_at_reset = _cpu_seconds()

    def report(self) -> dict:
        late = sorted(self.lateness)

        def q(p: float) -> float:
            return late[min(len(late) - 1, int(p * len(late)))] if late else 0.0

        span = (self.last_end - self.first_arrival) if self.first_arrival and self.last_end else 0.0
        return {
            "requests": self.requests, "completed": self.completed, "aborted": self.aborted,
            "max_open_streams": self.max_open,
            "mean_open_streams": self.busy / span if span > 0 else 0.0,
            "span_s": span,
            # time.monotonic() is the system's CLOCK_MONOTONIC: comparable with the client's.
            "first_arrival_monotonic": self.first_arrival, "last_end_monotonic": self.last_end,
            "lateness_ms": {"mean": 1000 * statistics.fmean(late) if late else 0.0, "p50": 1000 * q(0.5),
                            "p99": 1000 * q(0.99), "max": 1000 * (late[-1] if late else 0.0)},
            "cpu_s": _cpu_seconds() - self.cpu_at_reset,
            "rate_limited": self.rate_limited,
            # By key's position in LIMITS order of first use, never the key itself.
            "keys": list(self.keys.values()),
        }

    def admit(self, key: str, now: float) -> float:
        """0 when ``key`` may send now, else the seconds until it may (counted)."""
        rate = LIMITS.get(key, DEFAULT_RATE)
        counts = self.keys.setdefault(key, {"key": f"key {len(self.keys) + 1}", "rate": rate, "admitted": 0,
                                             "rate_limited": 0, "first": None, "last": None})
        if rate is not None:
            bucket = self.buckets.get(key)
            if bucket is None:
                bucket = self.buckets[key] = Bucket(rate, BURST)
            wait = bucket.take(now)
            if wait > 0:
                counts["rate_limited"] += 1
                self.rate_limited += 1
                return wait
        counts["admitted"] += 1
        counts["first"] = counts["first"] or now
        counts["last"] = now
        return 0.0


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


STATS = Stats()
_SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
             b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n")


class ChatProtocol(asyncio.Protocol):
    """One keep-alive connection; one request at a time, as HTTP/1.1 clients send them."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.key = ""  # the Authorization header of the request being answered
        self.transport: asyncio.Transport | None = None
        self.pending: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None
            STATS.open -= 1
            STATS.aborted += 1
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while self.transport is not None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            length = 0
            self.key = ""
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
                elif name.strip().lower() == "authorization":
                    self.key = value.strip()
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4:end + 4 + length])
            del self.buffer[:end + 4 + length]
            method, path = (head[0].split(" ") + ["", ""])[:2]
            self.handle(method, path, body)

    def handle(self, method: str, path: str, body: bytes) -> None:
        assert self.transport is not None
        if method == "POST" and path.startswith("/v1/chat/completions"):
            self.chat(body)
        elif method == "GET" and path in ("/stats", "/reset"):
            global STATS
            if path == "/reset":
                STATS = Stats()
            self.send_json(STATS.report())
        else:
            self.send_json({"error": "not found"}, "404 Not Found")

    def send_json(self, payload: object, status: str = "200 OK") -> None:
        assert self.transport is not None
        data = json.dumps(payload).encode()
        self.transport.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(data)}\r\n\r\n".encode() + data)

    def chat(self, body: bytes) -> None:
        assert self.transport is not None
        arrival = time.monotonic()
        try:
            request = json.loads(body)
            message = str(request["messages"][-1]["content"])
            model = str(request.get("model", "stub-model"))
        except (ValueError, KeyError, IndexError, TypeError):
            self.send_json({"error": "expected a chat completions request"}, "400 Bad Request")
            return
        wait = STATS.admit(self.key, arrival)
        if wait > 0:
            self.refuse(wait)
            return
        latency = latency_for(message) if FIXED_LATENCY is None else FIXED_LATENCY
        STATS.requests += 1
        STATS.open += 1
        STATS.max_open = max(STATS.max_open, STATS.open)
        if STATS.first_arrival is None:
            STATS.first_arrival = arrival
        if request.get("stream") is True:
            first, rest = stream_events(message, model)
            self.transport.write(_SSE_HEAD + _chunked(first))
            rest = _chunked(rest) + b"0\r\n\r\n"
        else:  # a client that does not stream (promptfoo's openai provider): one JSON answer
            data = json.dumps(completion(message, model)).encode()
            rest = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                    f"\r\n").encode() + data
        self.pending = asyncio.get_running_loop().call_at(
            asyncio.get_running_loop().time() + latency, self.finish, arrival, latency, rest)

    def refuse(self, wait: float) -> None:
        """OpenAI's answer to a request beyond the key's rate."""
        assert self.transport is not None
        rate = LIMITS.get(self.key, DEFAULT_RATE)
        data = json.dumps({"error": {
            "message": f"Rate limit reached for requests: Limit {rate:g}/s. Please try again in {wait * 1000:.0f}ms.",
            "type": "requests", "param": None, "code": "rate_limit_exceeded"}}).encode()
        self.transport.write(
            f"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nretry-after: {max(1, math.ceil(wait))}\r\n"
            f"retry-after-ms: {max(1, round(wait * 1000))}\r\nx-ratelimit-limit-requests: {rate:g}\r\n"
            f"x-ratelimit-remaining-requests: 0\r\nx-ratelimit-reset-requests: {wait:.3f}s\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode() + data)

    def finish(self, arrival: float, latency: float, rest: bytes) -> None:
        self.pending = None
        STATS.open -= 1
        if self.transport is None or self.transport.is_closing():
            STATS.aborted += 1
            return
        self.transport.write(rest)
        now = time.monotonic()
        STATS.completed += 1
        STATS.lateness.append(now - arrival - latency)
        STATS.busy += now - arrival
        STATS.last_end = now


async def serve(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(ChatProtocol, "127.0.0.1", port, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)  # the parent reads the port from here
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rate", type=float, default=None, help="requests per second per API key (default: no limit)")
    parser.add_argument("--burst", type=float, default=2.0, help="requests a key may send at once (default 2)")
    parser.add_argument("--key-rate", action="append", default=[], metavar="KEY=R",
                        help="a rate of its own for the key (its whole Authorization header)")
    parser.add_argument("--latency", type=float, default=None,
                        help="seconds every request waits before its stream (default: latency_for the message)")
    args = parser.parse_args()
    global DEFAULT_RATE, BURST, FIXED_LATENCY
    DEFAULT_RATE, BURST, FIXED_LATENCY = args.rate, args.burst, args.latency
    for item in args.key_rate:
        key, _, rate = item.rpartition("=")
        LIMITS[key] = float(rate)
    try:
        import uvloop  # the fastest event loop available, so the server is not the bottleneck
    except ImportError:
        runner = asyncio.run
    else:
        runner = uvloop.run
    try:
        runner(serve(args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
