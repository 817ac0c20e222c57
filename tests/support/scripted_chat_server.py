"""An OpenAI-compatible chat completions server on loopback that answers from a script.

``answers`` maps the content of a request's last message to the assistant's reply (a
mapping, or a function returning None for a prompt it does not know), so a test decides
exactly what the model "said" for each prompt; a prompt not in the script gets HTTP 400. Every request is kept (its Authorization header and JSON body) for the test to
check what was sent. Stdlib only, one thread per connection.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.http_server import FakeHandler, HandlerServer


@dataclass
class Request:
    """One request the server got."""

    path: str
    authorization: str
    body: dict[str, Any]


@dataclass
class ScriptedChatServer:
    """``with ScriptedChatServer({...}) as server: server.base_url`` (``.../v1``)."""

    answers: dict[str, str] | Callable[[str], str | None]
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        requests, lock = self.requests, self._lock
        answers = self.answers
        script: Callable[[str], str | None] = answers.get if isinstance(answers, dict) else answers

        class Handler(FakeHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
                body = json.loads(self.body_bytes() or b"{}")
                with lock:
                    requests.append(Request(self.path, self.headers.get("authorization", ""), body))
                messages = body.get("messages") or [{}]
                prompt = messages[-1].get("content")
                reply = script(prompt) if isinstance(prompt, str) else None
                if not self.path.endswith("/chat/completions") or reply is None:
                    self.send_json(400, {"error": {"message": f"no scripted answer for {prompt!r}", "type": "test"}})
                    return
                self.send_json(200, {
                    "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "m"),
                    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}})

        self._handler = Handler
        self._server: HandlerServer | None = None

    @property
    def base_url(self) -> str:
        """What ``OPENAI_BASE_URL`` is set to: the API root, ``/chat/completions`` below it."""
        assert self._server is not None, "base_url is known once the server is entered"
        return f"{self._server.url}/v1"

    def __enter__(self) -> ScriptedChatServer:
        self._server = HandlerServer(self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
