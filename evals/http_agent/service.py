#!/usr/bin/env python3
"""A deterministic listing agent behind HTTP, for the `http_agent` example eval.

Start it (stdlib only, loopback only, no network, no model):

    python evals/http_agent/service.py --port 8766

then, in another shell:

    HTTP_AGENT_PORT=8766 evalh run evals/http_agent/eval.yaml

It answers questions about the same property listings as evals/quickstart and exposes
two request/response shapes:

- ``POST /agent`` -- the ``simple`` shape (eval-harness's). Request ``{"input": {...}}``
  (what the http adapter's ``provider: simple`` sends); response
  ``{"output": "...", "tool_calls": [{"name": ..., "arguments": {...}}]}``.
- ``POST /v1/chat/completions`` -- the OpenAI chat shape. Request ``{"model": ...,
  "messages": [...]}``; response ``{"id", "object": "chat.completion", "model",
  "choices": [{"message": {"role": "assistant", "content", "tool_calls": [...]}}],
  "usage": {"prompt_tokens", "completion_tokens", "total_tokens"}}``. The listing id is
  read from the last user message. Like a smaller model, it forgets to look up the suburb
  average for listings in Fitzroy, so the two variants of the eval differ.

``GET /health`` answers ``{"ok": true}`` (the test waits on it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LISTINGS = {
    "ABC123": {"suburb": "Richmond", "price": 1_350_000},
    "DEF456": {"suburb": "Brunswick", "price": 980_000},
    "GHI789": {"suburb": "Carlton", "price": 1_120_000},
    "JKL012": {"suburb": "Fitzroy", "price": 1_480_000},
    "MNO345": {"suburb": "Richmond", "price": 1_050_000},
    "PQR678": {"suburb": "Brunswick", "price": 870_000},
}
SUBURB_AVERAGE = {"Richmond": 1_200_000, "Brunswick": 950_000, "Carlton": 1_100_000, "Fitzroy": 1_400_000}
LISTING_ID = re.compile(r"\b[A-Z]{3}\d{3}\b")


def answer(listing_id: str | None, *, skip_average_in: tuple[str, ...] = ()) -> tuple[str, list[dict[str, Any]]]:
    """(answer text, tool calls as [{name, arguments}]) for one listing id."""
    if not listing_id:
        return "Which listing do you mean? Please give its id.", []
    calls: list[dict[str, Any]] = [{"name": "get_listing_details", "arguments": {"listing_id": listing_id}}]
    listing = LISTINGS.get(listing_id)
    if listing is None:
        return f"I could not find listing {listing_id}.", calls
    suburb, price = listing["suburb"], listing["price"]
    if suburb in skip_average_in:
        return f"Listing {listing_id} is priced at ${price:,}.", calls
    calls.append({"name": "get_average_suburb_price", "arguments": {"suburb": suburb}})
    average = SUBURB_AVERAGE[suburb]
    verdict = "above" if price > average else "below"
    return (f"Listing {listing_id} in {suburb} is priced at ${price:,}, "
            f"{verdict} the suburb average of ${average:,}."), calls


def simple_response(body: dict[str, Any]) -> dict[str, Any]:
    data = body.get("input") or {}
    listing_id = data.get("listing_id")
    if listing_id is None:
        found = LISTING_ID.search(str(data.get("user_message", "")))
        listing_id = found.group(0) if found else None
    text, calls = answer(listing_id)
    return {"output": text, "tool_calls": calls}


def chat_response(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    user = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    content = user[-1].get("content", "") if user else ""
    if isinstance(content, list):  # content parts
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    found = LISTING_ID.search(str(content))
    text, calls = answer(found.group(0) if found else None, skip_average_in=("Fitzroy",))
    tool_calls = [{"id": f"call_{i}", "type": "function",
                   "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                  for i, c in enumerate(calls)]
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict)) + 8
    completion_tokens = len(text.split())
    return {
        "id": f"chatcmpl-{found.group(0) if found else 'none'}",
        "object": "chat.completion",
        "model": body.get("model") or "stub-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls" if tool_calls else "stop",
                     "message": {"role": "assistant", "content": text, "tool_calls": tool_calls}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


ROUTES = {"/agent": simple_response, "/v1/chat/completions": chat_response}


# Not the bundled judge's port (8765): both run at once when trying the examples.
DEFAULT_PORT = 8766

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the adapter reuses connections
    server_version = "http-agent-stub/1.0"

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/health":
            self._send(200, {"ok": True})
        else:
            self._send(404, {"error": f"no route {self.path}"})

    def do_POST(self) -> None:
        route = ROUTES.get(self.path.split("?")[0])
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if route is None:
            self._send(404, {"error": f"no route {self.path}"})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            self._send(400, {"error": f"invalid JSON: {exc}"})
            return
        if not isinstance(body, dict):
            self._send(400, {"error": "the body must be a JSON object"})
            return
        self._send(200, route(body))

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:  # type: ignore[attr-defined]
            super().log_message(format, *args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Deterministic listing agent over HTTP (loopback).")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    try:
        server = ThreadingHTTPServer((args.host, args.port), Handler)
    except OSError as exc:
        # One line, not a traceback: the usual cause is another server on the port.
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc} "
              f"(is another server running there? pick another with --port)", file=sys.stderr)
        return 1
    server.daemon_threads = True
    server.verbose = args.verbose  # type: ignore[attr-defined]
    host, port = server.server_address[:2]
    print(f"http_agent listening on http://{host}:{port} (POST /agent, POST /v1/chat/completions)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
