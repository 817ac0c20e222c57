"""A real OpenAI-compatible ``/embeddings`` server on 127.0.0.1 for tests (stdlib, in a thread).

Each text embeds to its letter counts a..z, so similar spellings give high cosines and the
answers are deterministic. ``mode`` switches the behaviour: ``ok``, ``http_500``,
``malformed`` (JSON without ``data``), ``echo_401`` (echoes the key back), ``reversed`` (items out of order, with ``index``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.http_server import FakeHandler, serving_handler


def letter_counts(text: str) -> list[float]:
    return [float(text.lower().count(chr(c))) for c in range(ord("a"), ord("z") + 1)]


class FakeEmbeddingsServer:
    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict] = []
        server = self

        class Handler(FakeHandler):
            def do_POST(self) -> None:
                body = self.body_json()
                server.requests.append({"path": self.path, "body": body,
                                        "authorization": self.headers.get("Authorization")})
                if self.path != "/v1/embeddings":
                    return self.send_json(404, {"error": {"message": f"no route {self.path}"}})
                if server.mode == "http_500":
                    return self.send_json(500, {"error": {"message": "model overloaded"}})
                if server.mode == "echo_401":
                    return self.send_json(401, {"error": {"message": f"bad key {self.headers.get('Authorization')}"}})
                if server.mode == "malformed":
                    return self.send_json(200, {"object": "list"})
                items = [{"object": "embedding", "index": i, "embedding": letter_counts(t)}
                         for i, t in enumerate(body["input"])]
                if server.mode == "reversed":
                    items.reverse()
                self.send_json(200, {"object": "list", "data": items, "model": body["model"]})

        self.handler = Handler
        self.base_url = ""  # set while served (fake_embeddings_server)


@contextmanager
def fake_embeddings_server() -> Iterator[FakeEmbeddingsServer]:
    """A :class:`FakeEmbeddingsServer` answering on loopback for the block."""
    server = FakeEmbeddingsServer()
    with serving_handler(server.handler) as url:
        server.base_url = f"{url}/v1"
        yield server
