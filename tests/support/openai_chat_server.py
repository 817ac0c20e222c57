"""An OpenAI-compatible chat-completions server on loopback that answers each request with
its last user message after ``Say:`` (an "echo model"; a grading call, with the reply its
``grader_says`` marker scripts), and embeds text as letter counts: a test sets the answer through the
prompt, and two tools pointed at it see the same answers. (The prefix keeps a prompt whose
answer is JSON from reading as JSON: promptfoo would send such a prompt as the messages.)"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.http_server import FakeHandler, serving_handler

PREFIX = "Say: "  # the prompt "Say: <answer>" makes the model answer <answer>
# A request whose messages hold grader_says(REPLY) (in a graded assertion's value) is answered
# REPLY: the test scripts what a grading model says, whatever prompt the grader wraps it in
# (base64, so no template engine's escaping changes it).
GRADER = re.compile(r"<<grader:([A-Za-z0-9+/=]*)>>")


def grader_says(reply: str) -> str:
    """The marker that makes the echo server answer a grading call with ``reply``."""
    return f"<<grader:{base64.b64encode(reply.encode()).decode()}>>"


class _Echo(FakeHandler):
    seen: list[dict] | None = None  # echo_chat_server(seen=...): every request body, in order

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
        try:
            body = json.loads(self.body_bytes() or b"{}")
        except ValueError:
            body = {}
        if self.seen is not None:
            self.seen.append(body)
        if self.path.endswith("/embeddings"):
            return self._embeddings(body)
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        user = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        content = user[-1].get("content") if user else ""
        text = content if isinstance(content, str) else json.dumps(content)
        # A grading call (not a "Say:" prompt): the reply a test wrote into what is graded.
        scripted = GRADER.search(json.dumps([m.get("content") for m in messages if isinstance(m, dict)]))
        if text.startswith(PREFIX):
            text = text.removeprefix(PREFIX)
        elif scripted:
            text = base64.b64decode(scripted.group(1)).decode()
        self.send_json(200, {
            "id": "chatcmpl-echo", "object": "chat.completion", "created": 0, "model": body.get("model", "echo"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        })

    def _embeddings(self, body: dict) -> None:
        # A deterministic embedding: the counts of the letters a-z (so the cosine is known).
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts or []
        data = [{"object": "embedding", "index": i, "embedding": letter_counts(t)} for i, t in enumerate(texts)]
        self.send_json(200, {"object": "list", "data": data, "model": body.get("model"),
                    "usage": {"prompt_tokens": 1, "total_tokens": 1}})


def letter_counts(text: str) -> list[float]:
    """The echo server's embedding of ``text``: how often each letter a-z occurs (plus 1e-6 so
    no vector is zero)."""
    lowered = text.lower()
    return [lowered.count(chr(ord("a") + i)) + 1e-6 for i in range(26)]


@contextmanager
def echo_chat_server(seen: list[dict] | None = None) -> Iterator[str]:
    """Serve the echo model on 127.0.0.1 (a free port); yields the base URL ending in ``/v1``.
    With ``seen``, every request's body is appended to it."""
    handler = _Echo if seen is None else type("_RecordingEcho", (_Echo,), {"seen": seen})
    with serving_handler(handler) as url:
        yield f"{url}/v1"
