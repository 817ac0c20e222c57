"""A real OpenAI-compatible ``/embeddings`` server on 127.0.0.1 for tests (stdlib, in a thread).

Each text embeds to its letter counts a..z, so similar spellings give high cosines and the
answers are deterministic. ``mode`` switches the behaviour: ``ok``, ``http_500``,
``malformed`` (JSON without ``data``), ``echo_401`` (echoes the key back), ``reversed`` (items out of order, with ``index``).
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def letter_counts(text: str) -> list[float]:
    return [float(text.lower().count(chr(c))) for c in range(ord("a"), ord("z") + 1)]


class FakeEmbeddingsServer:
    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body,
                                        "authorization": self.headers.get("Authorization")})
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if server.mode == "http_500":
                    return self._send(500, {"error": {"message": "model overloaded"}})
                if server.mode == "echo_401":
                    return self._send(401, {"error": {"message": f"bad key {self.headers.get('Authorization')}"}})
                if server.mode == "malformed":
                    return self._send(200, {"object": "list"})
                items = [{"object": "embedding", "index": i, "embedding": letter_counts(t)}
                         for i, t in enumerate(body["input"])]
                if server.mode == "reversed":
                    items.reverse()
                self._send(200, {"object": "list", "data": items, "model": body["model"]})

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@contextmanager
def fake_embeddings_server():
    server = FakeEmbeddingsServer()
    thread = threading.Thread(target=server.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
