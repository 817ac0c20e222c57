"""An OpenAI-compatible chat completions server on loopback that answers from a script.

``answers`` maps the content of a request's last message to the assistant's reply (a
mapping, or a function returning None for a prompt it does not know), so a test decides
exactly what the model "said" for each prompt; a prompt not in the script gets HTTP 400. Every request is kept (its Authorization header and JSON body) for the test to
check what was sent. Stdlib only, one thread per connection.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable
from typing import Any


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

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
                with lock:
                    requests.append(Request(self.path, self.headers.get("authorization", ""), body))
                messages = body.get("messages") or [{}]
                prompt = messages[-1].get("content")
                reply = script(prompt) if isinstance(prompt, str) else None
                if not self.path.endswith("/chat/completions") or reply is None:
                    self._send(400, {"error": {"message": f"no scripted answer for {prompt!r}", "type": "test"}})
                    return
                self._send(200, {
                    "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "m"),
                    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}})

            def _send(self, status: int, payload: object) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass  # quiet: the test reads ``requests``

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-chat", daemon=True)

    @property
    def base_url(self) -> str:
        """What ``OPENAI_BASE_URL`` is set to: the API root, ``/chat/completions`` below it."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(30)
