"""An OpenAI-compatible chat-completions server on loopback that streams (SSE) its answer
with reasoning: ``reasoning_content`` deltas ("thinking"), then the last user message back in
two content deltas, then the usage and ``[DONE]``. Deterministic, so two runs against it
record the same traces."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.http_server import FakeHandler, serving_handler


def _chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> bytes:
    event: dict = {"id": "chatcmpl-stream", "object": "chat.completion.chunk", "created": 0, "model": "streamer",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        event["usage"] = usage
    return b"data: " + json.dumps(event).encode() + b"\n\n"


class _Streamer(FakeHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
        body = json.loads(self.body_bytes() or b"{}")
        user = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
        text = str(user[-1].get("content", "")) if user else ""
        half = len(text) // 2
        events = [
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"reasoning_content": "The user wants "}),
            _chunk({"reasoning_content": "an echo."}),
            _chunk({"content": text[:half]}),
            _chunk({"content": text[half:]}),
            _chunk({}, finish="stop", usage={"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11,
                                            "completion_tokens_details": {"reasoning_tokens": 3}}),
            b"data: [DONE]\n\n",
        ]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


@contextmanager
def streaming_chat_server() -> Iterator[str]:
    """Serve the streaming echo model on 127.0.0.1 (a free port); yields the base URL ending in ``/v1``."""
    with serving_handler(_Streamer) as url:
        yield f"{url}/v1"
