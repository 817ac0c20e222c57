"""A deterministic local judge server for tests and the offline ``judged_answers`` example.

It speaks the OpenAI chat-completions (``POST /v1/chat/completions``) and the Anthropic
messages (``POST /v1/messages``) shapes on loopback, stdlib only. It is a keyword judge,
not a model: it reads the prompt sections that :mod:`evalh_pipeline.judges.prompt` writes
and decides by quoted phrases.

- An assertion holds when every ``"quoted phrase"`` in it occurs (case-insensitively) in
  the judged material (final answer, thinking, structured output, tool calls); when the
  assertion says not/never/no/without, when none of them occurs. No quoted phrase: holds,
  and its reason says there was nothing to check (judges/keyword_rule.py: the rule, and
  the load warning for such assertions).
- A rubric scores by the share of the criteria's quoted phrases found, mapped onto the
  scale (all found: the best score; no quoted phrase: the best score, said in the reason).

Tests can script misbehaviour for the next requests (``malformed``, ``out_of_schema``,
``error_500``, ``rate_limited``: a 429 with ``Retry-After`` and OpenAI's error body, ``hang``)
with :meth:`FakeJudgeServer.script` or ``POST /control`` ``{"script": [...]}``; ``GET /stats``
returns the number of judge calls served and the most it answered at once (``peak_in_flight``;
``delay_seconds`` holds each answer that long, so calls overlap).

Run it: ``python -m tests.support.fake_judge_server --port 8765``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Any

from evalh_pipeline.judges.keyword_rule import NEGATED, NOTHING_QUOTED, NOTHING_QUOTED_RUBRIC, quoted_phrases
from evalh_pipeline.judges.prompt import ASSERTIONS_TITLE, FIELD_TITLE, RESPONSE_FIELD_TITLE, RUBRIC_TITLE, SECTIONS
from tests.support.http_server import HandlerServer, port_of

MODES = ("verdict", "malformed", "out_of_schema", "error_500", "rate_limited", "hang")
_JUDGED = {SECTIONS[k] for k in ("final_answer", "thinking", "structured", "tool_calls")}
_SECTION = re.compile(r"^## (.+)$", re.MULTILINE)
_NUMBERED = re.compile(r"^(\d+)\. (.*)$", re.MULTILINE)


def _sections(prompt: str) -> dict[str, str]:
    marks = list(_SECTION.finditer(prompt))
    return {m.group(1).strip(): prompt[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(prompt)].strip()
            for i, m in enumerate(marks)}


def keyword_verdict(prompt: str) -> dict[str, Any]:
    """The fake judge's answer to a prompt built by :func:`evalh_pipeline.judges.prompt.build_prompt`."""
    sections = _sections(prompt)
    material = "\n".join(text for title, text in sections.items()
                         if title in _JUDGED or title.startswith((RESPONSE_FIELD_TITLE, FIELD_TITLE))).lower()
    answer: dict[str, Any] = {}
    if ASSERTIONS_TITLE in sections:
        verdicts = []
        for number, text in _NUMBERED.findall(sections[ASSERTIONS_TITLE]):
            phrases = quoted_phrases(text)
            present = [p for p in phrases if p.lower() in material]
            if not phrases:
                passed, reason = True, NOTHING_QUOTED
            elif NEGATED.search(text):
                passed = not present
                reason = f"mentions {present}" if present else f"does not mention {phrases}"
            else:
                passed = len(present) == len(phrases)
                missing = [p for p in phrases if p not in present]
                reason = f"does not mention {missing}" if missing else f"mentions {phrases}"
            verdicts.append({"index": int(number), "passed": passed, "reason": reason})
        answer["assertions"] = verdicts
    if RUBRIC_TITLE in sections:
        body = sections[RUBRIC_TITLE]
        criteria = re.search(r"^Criteria: (.*)$", body, re.MULTILINE)
        scale_line = re.search(r"^Scale \(worst to best\): (.*)$", body, re.MULTILINE)
        scale = json.loads(scale_line.group(1)) if scale_line else [1, 2, 3, 4, 5]
        phrases = quoted_phrases(criteria.group(1)) if criteria else []
        found = [p for p in phrases if p.lower() in material]
        share = len(found) / len(phrases) if phrases else 1.0
        answer["rubric"] = {"score": scale[round((len(scale) - 1) * share)],
                            "reason": f"{len(found)} of {len(phrases)} key point(s) covered" if phrases
                            else NOTHING_QUOTED_RUBRIC}
    return answer


# The answers of the scripted error modes: (status, body, headers).
_SCRIPTED_ERRORS: dict[str, tuple[int, dict[str, Any], dict[str, str]]] = {
    "error_500": (500, {"error": {"message": "fake judge: scripted server error"}}, {}),
    "rate_limited": (429, {"error": {"message": "fake judge: scripted rate limit", "type": "requests",
                                     "code": "rate_limit_exceeded"}}, {"retry-after-ms": "20"}),
}

# The http_agent example service uses 8766, so both can run at once.
DEFAULT_PORT = 8765

class FakeJudgeServer:
    """The server in a background thread: ``with FakeJudgeServer() as server: server.openai_base_url``."""

    def __init__(self, port: int = 0, hang_seconds: float = 10.0,
                 delay_seconds: float = 0.0) -> None:
        self.hang_seconds = hang_seconds
        self.delay_seconds = delay_seconds
        self.calls = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.requests: list[dict[str, Any]] = []
        self._script: deque[str] = deque()
        self._lock = threading.Lock()
        self._release = threading.Event()
        # Serving from here on, on loopback (the shared helper of every in-process fake).
        self._server = HandlerServer(self._handler(), port)

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def port(self) -> int:
        return port_of(self.url)

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def script(self, *modes: str) -> None:
        """Behave as ``modes`` for the next requests, one each, then give verdicts again."""
        unknown = [m for m in modes if m not in MODES]
        if unknown:
            raise ValueError(f"unknown fake judge mode(s) {unknown} (known: {', '.join(MODES)})")
        with self._lock:
            self._script.extend(modes)

    def start(self) -> "FakeJudgeServer":
        """The server (it serves from construction): for ``with`` and chained calls."""
        return self

    def stop(self) -> None:
        self._release.set()  # wake any hanging handler
        self._server.close()

    def __enter__(self) -> "FakeJudgeServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_mode(self, record: dict[str, Any]) -> str:
        with self._lock:
            self.calls += 1
            self.requests.append(record)
            return self._script.popleft() if self._script else "verdict"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet: tests and the example print their own output
                pass

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/health":
                    self._send(200, {"ok": True})
                elif self.path == "/stats":
                    self._send(200, {"calls": server.calls, "peak_in_flight": server.peak_in_flight})
                else:
                    self._send(404, {"error": f"no route {self.path}"})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": "request body is not JSON"})
                    return
                if self.path == "/control":
                    try:
                        server.script(*body.get("script", []))
                    except ValueError as exc:
                        self._send(400, {"error": str(exc)})
                        return
                    self._send(200, {"ok": True})
                    return
                if self.path not in ("/v1/chat/completions", "/v1/messages"):
                    self._send(404, {"error": f"no route {self.path}"})
                    return
                anthropic = self.path == "/v1/messages"
                mode = server._next_mode({"path": self.path, "headers": dict(self.headers.items()), "body": body})
                if mode in _SCRIPTED_ERRORS:
                    self._send(*_SCRIPTED_ERRORS[mode])
                    return
                with server._lock:
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    self._answer(mode, anthropic, body)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, mode: str, anthropic: bool, body: dict[str, Any]) -> None:
                if server.delay_seconds:
                    server._release.wait(server.delay_seconds)
                if mode == "hang":
                    server._release.wait(server.hang_seconds)
                if anthropic:
                    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                    prompt_chars = len(prompt) + len(str(body.get("system", "")))
                else:
                    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")
                    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
                if mode == "malformed":
                    text = "I think it passes, mostly {"
                elif mode == "out_of_schema":
                    text = json.dumps({"verdict": "looks fine"})
                else:
                    text = json.dumps(keyword_verdict(prompt))
                tokens_in, tokens_out = prompt_chars // 4 + 1, len(text) // 4 + 1
                model = body.get("model", "fake-judge")
                if anthropic:
                    self._send(200, {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                                     "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                                     "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}})
                else:
                    self._send(200, {"id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": text}}],
                                     "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                                               "total_tokens": tokens_in + tokens_out}})

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Deterministic local judge server (OpenAI and Anthropic shapes).")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    try:
        server = FakeJudgeServer(args.port)
    except OSError as exc:
        # One line, not a traceback: the usual cause is another server on the port.
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc} "
              f"(is another server running there? pick another with --port or EVALH_JUDGE_PORT)", file=sys.stderr)
        return 1
    print(f"fake judge listening on {server.url} (OpenAI base URL {server.openai_base_url}, "
          f"Anthropic base URL {server.anthropic_base_url})", flush=True)
    try:
        threading.Event().wait()  # serve until Ctrl-C
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
