"""Helpers for the secrets tests: a loopback server that echoes what it was sent, and a
search for secret values in every file a run leaves behind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.http_server import FakeHandler, serving_handler


class _EchoHandler(FakeHandler):
    """Answers every POST with the request's headers, path and query, as a careless API
    that reflects its input (or logs it into its answer) would."""

    def do_POST(self):  # noqa: N802 - the http.server spelling
        body = self.body_bytes().decode("utf-8", "replace")
        echo = {"path": self.path, "headers": dict(self.headers.items()), "body": body}
        answer = {
            "final_answer": f"you sent {json.dumps(echo)}",
            "structured": echo,
            "metrics": {"token_input": 3, "token_output": 4},
        }
        self.send_json(200, answer)


@contextmanager
def echo_server() -> Iterator[str]:
    """``http://127.0.0.1:<ephemeral port>`` of a running echo server (stopped on exit)."""
    with serving_handler(_EchoHandler) as url:
        yield url


def files_containing(roots: list[Path], secret: str) -> list[str]:
    """Every file under ``roots`` whose bytes contain ``secret`` (raw or JSON-escaped)."""
    needles = {secret.encode(), json.dumps(secret)[1:-1].encode()}
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                if any(needle in data for needle in needles):
                    found.append(str(path))
    return found


def error_text(stderr: str) -> str:
    """What ``evalh`` printed after its ``error:`` heading, lines joined (progress lines before it skipped)."""
    lines = stderr.strip().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("error:"))
    return " ".join(line.strip() for line in lines[start + 1:])
