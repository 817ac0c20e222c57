"""http streaming: SSE / JSON lines / raw chunks from a real server on 127.0.0.1, cut on demand."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from pydantic import ValidationError

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.config.errors import ConfigError
from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.systems.base import AdapterError, SystemContext, SystemResponse
from evalh_pipeline.systems.http import HttpConfig, HttpSystem
from tests.support.evals import write_eval
from tests.support.http_server import FakeHandler, serving_handler

CASE = EvalCase(id="c1", input={"user_message": "Capital of France?"})
GAP = 0.05  # seconds between events, so first and last token differ even on a loaded machine

ANTHROPIC_EVENTS = [
    {"type": "message_start", "message": {"id": "msg_s", "type": "message", "role": "assistant", "content": [],
                                          "usage": {"input_tokens": 15, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "France, "}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "so Paris."}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}},
    {"type": "content_block_stop", "index": 0},
    {"type": "ping"},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Par"}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "is"}},
    {"type": "content_block_stop", "index": 1},
    {"type": "content_block_start", "index": 2,
     "content_block": {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {}}},
    {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"q\": "}},
    {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"fr\"}"}},
    {"type": "content_block_stop", "index": 2},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}},
    {"type": "message_stop"},
]
ANTHROPIC_CUT = 9  # after the text delta "Par"

GEMINI_CHUNKS = [
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "Thinking about ", "thought": True}]}}],
     "responseId": "gem-1"},
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "capitals.", "thought": True}]}}]},
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "Par"}]}}]},
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "is"},
                                                             {"functionCall": {"name": "lookup", "args": {"q": "fr"}}}]},
                     "finishReason": "STOP"}],
     "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "thoughtsTokenCount": 8}},
]

GENERIC_EVENTS = [
    {"think": "hmm"},
    {"t": "Par"},
    {"t": ""},
    {"t": "is", "think": " ok"},
    {"tool": {"id": "c1", "name": "lookup", "arguments": "{\"q\": "}},
    {"tool": {"id": "c1", "arguments": "\"fr\"}"}},
    {"finished": True, "usage": {"in": 3, "out": 5}, "run": "run-7"},
]
GENERIC_MAPPING = {
    "delta": "$.t", "thinking_delta": "$.think", "done": "$.finished", "tool_call": "$.tool",
    "tokens.input": "$.usage.in", "tokens.output": "$.usage.out", "trace_id": "$.run",
}


def make_handler(seen: list[dict]):
    class Handler(FakeHandler):
        def _start(self, content_type: str, length: int | None = None):
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            if length is not None:
                self.send_header("Content-Length", str(length))
            self.end_headers()
            self.close_connection = True

        def _write(self, pieces: list[bytes]):
            try:
                for piece in pieces:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    time.sleep(GAP)
            except OSError:  # the client stopped reading (done marker, size cap)
                pass

        def do_POST(self):
            size = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(size)) if size else None
            path, _, query = self.path.partition("?")
            seen.append({"path": path, "query": query, "body": body})
            cut = path.endswith("-cut")
            broken = path.endswith("-broken")  # declares more than it sends: the connection breaks
            base = path.removesuffix("-cut").removesuffix("-broken")

            def sse(events, done_sentinel=False, event_names=False):
                out = []
                for e in events:
                    name = f"event: {e['type']}\n" if event_names else ""
                    out.append(f"{name}data: {json.dumps(e)}\n\n".encode())
                if done_sentinel:
                    out.append(b"data: [DONE]\n\n")
                return out

            if base == "/anthropic":
                pieces = sse(ANTHROPIC_EVENTS[:ANTHROPIC_CUT] if cut else ANTHROPIC_EVENTS, event_names=True)
                ctype = "text/event-stream"
            elif base == "/gemini":
                pieces, ctype = sse(GEMINI_CHUNKS[:3] if cut else GEMINI_CHUNKS), "text/event-stream"
            elif base == "/jsonl":
                events = GENERIC_EVENTS[:4] if cut or broken else GENERIC_EVENTS
                pieces = [json.dumps(e).encode() + b"\n" for e in events]
                pieces.insert(1, b"\n")  # blank lines are skipped
                ctype = "application/x-ndjson"
            elif base == "/sse":
                events = [{"delta": {"text": t}} for t in ("The ", "answer ", "is Paris")]
                pieces = sse(events[:2] if cut or broken else events, done_sentinel=not (cut or broken))
                ctype = "text/event-stream"
            elif base == "/sse-endings":
                # CRLF, CR and LF line endings, a U+2028 inside a JSON string (not a line end
                # for SSE), and pieces that split lines, CRLF pairs and UTF-8 characters.
                endings = ["\r\n", "\r", "\n"]
                text = "".join(
                    f"data: {json.dumps({'delta': {'text': t}}, ensure_ascii=False)}{endings[i % 3]}{endings[i % 3]}"
                    for i, t in enumerate(["Pa", "ris\u2028", " €"])) + "data: [DONE]\r\n\r\n"
                raw = text.encode()
                pieces = [raw[i:i + 7] for i in range(0, len(raw), 7)]
                ctype = "text/event-stream"
            elif base == "/raw":
                pieces = [b"The ", b"answer ", b"is Paris"][: 2 if broken else 3]
                ctype = "text/plain; charset=utf-8"
            else:
                self.send_response(404)
                self.end_headers()
                return
            self._start(ctype, length=sum(map(len, pieces)) + 500 if broken else None)
            self._write(pieces)

    return Handler


@pytest.fixture
def server():
    seen: list[dict] = []
    with serving_handler(make_handler(seen)) as served:

        class Server:
            url = served
            requests = seen

        yield Server


def call(config: dict, case: EvalCase = CASE) -> SystemResponse:
    async def go():
        variant = RunVariant(name="v1", adapter="http", config=config)
        system = HttpSystem(variant, SystemContext(eval_dir=".", max_concurrency=2))
        await system.start()
        try:
            return await system.run(case, None)
        finally:
            await system.close()
    return asyncio.run(go())


def assert_timed(m, chunks: int, basis: str = "reported_output_tokens"):
    assert m.stream_chunks == chunks
    assert 0 < m.latency_first_token_ms < m.latency_last_token_ms
    assert m.tokens_per_second and m.tokens_per_second > 0
    assert m.custom["tokens_per_second_basis"] == basis


# --- anthropic_messages --------------------------------------------------------------------


def test_anthropic_stream_assembles_text_thinking_tool_use_and_usage(server):
    r = call({"endpoint": f"{server.url}/anthropic", "provider": "anthropic_messages", "model": "claude-x",
              "stream": True})
    sent = server.requests[-1]["body"]
    assert sent["stream"] is True and "stream_options" not in sent and sent["model"] == "claude-x"
    assert r.output.final_answer == "Paris"
    assert r.output.thinking == "France, so Paris."
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [("toolu_9", "lookup", {"q": "fr"})]
    assert (r.metrics.token_input, r.metrics.token_output) == (15, 12)
    assert r.metrics.stream_completed is True
    assert_timed(r.metrics, chunks=len(ANTHROPIC_EVENTS))
    assert r.extra["trace_id"] == "msg_s"


def test_anthropic_stream_cut_before_message_stop_keeps_what_arrived(server):
    r = call({"endpoint": f"{server.url}/anthropic-cut", "provider": "anthropic_messages", "stream": True})
    assert r.metrics.stream_completed is False and r.metrics.stream_chunks == ANTHROPIC_CUT
    assert r.output.final_answer == "Par" and r.output.thinking == "France, so Paris."
    assert r.tool_calls == []


# --- gemini ----------------------------------------------------------------------------------


def test_gemini_stream_uses_alt_sse_and_keeps_thought_parts_as_thinking(server):
    r = call({"endpoint": f"{server.url}/gemini", "provider": "gemini", "model": "gemini-x", "stream": True})
    req = server.requests[-1]
    assert req["query"] == "alt=sse" and "stream" not in req["body"]
    assert r.output.final_answer == "Paris"
    assert r.output.thinking == "Thinking about capitals."
    assert [(c.name, c.arguments) for c in r.tool_calls] == [("lookup", {"q": "fr"})]
    assert (r.metrics.token_input, r.metrics.token_output, r.metrics.token_thinking) == (5, 3, 8)
    assert r.metrics.stream_completed is True
    assert_timed(r.metrics, chunks=4)
    assert r.extra["trace_id"] == "gem-1"


def test_gemini_stream_without_finish_reason_is_not_completed(server):
    r = call({"endpoint": f"{server.url}/gemini-cut", "provider": "gemini", "stream": True,
              "query_params": {"alt": "sse", "key": "k"}})
    assert "alt=sse&key=k" == server.requests[-1]["query"]
    assert r.metrics.stream_completed is False and r.metrics.stream_chunks == 3
    assert r.output.final_answer == "Par" and r.output.thinking == "Thinking about capitals."
    # No usage arrived: tokens per second is an estimate from the text (chars / 4).
    assert r.metrics.token_output is None
    assert r.metrics.custom["tokens_per_second_basis"] == "estimated_chars_div_4"


# --- no provider: stream_mapping -------------------------------------------------------------


def test_json_lines_with_stream_mapping(server):
    r = call({"endpoint": f"{server.url}/jsonl", "stream": True, "stream_format": "json_lines",
              "stream_mapping": GENERIC_MAPPING, "body": {"stream": True}})
    assert server.requests[-1]["body"] == {**CASE.input, "stream": True}  # eval-harness: body + input
    assert r.output.final_answer == "Paris" and r.output.thinking == "hmm ok"
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [("c1", "lookup", {"q": "fr"})]
    assert (r.metrics.token_input, r.metrics.token_output) == (3, 5)
    assert r.metrics.stream_completed is True
    assert_timed(r.metrics, chunks=len(GENERIC_EVENTS))
    assert r.extra["trace_id"] == "run-7"


def test_json_lines_without_the_done_event_is_not_completed(server):
    r = call({"endpoint": f"{server.url}/jsonl-cut", "stream": True, "stream_format": "json_lines",
              "stream_mapping": GENERIC_MAPPING})
    assert r.metrics.stream_completed is False and r.metrics.stream_chunks == 4
    assert r.output.final_answer == "Paris" and r.output.thinking == "hmm ok"


def test_json_lines_without_a_done_path_completes_at_a_normal_end_only(server):
    mapping = {"delta": "$.t"}
    whole = call({"endpoint": f"{server.url}/jsonl-cut", "stream": True, "stream_format": "json_lines",
                  "stream_mapping": mapping})
    assert whole.metrics.stream_completed is True and whole.output.final_answer == "Paris"
    broken = call({"endpoint": f"{server.url}/jsonl-broken", "stream": True, "stream_format": "json_lines",
                   "stream_mapping": mapping})
    assert broken.metrics.stream_completed is False and broken.output.final_answer == "Paris"


def test_generic_sse_ends_at_done_sentinel_and_estimates_tokens(server):
    config = {"endpoint": f"{server.url}/sse", "stream": True, "stream_mapping": {"delta": "$.delta.text"}}
    r = call(config)
    assert r.output.final_answer == "The answer is Paris" and r.output.thinking is None
    assert r.metrics.stream_completed is True
    assert_timed(r.metrics, chunks=3, basis="estimated_chars_div_4")
    for path in ("/sse-cut", "/sse-broken"):  # ends without [DONE]; the connection breaks
        cut = call({**config, "endpoint": f"{server.url}{path}"})
        assert cut.metrics.stream_completed is False and cut.output.final_answer == "The answer "


def test_sse_lines_end_at_crlf_cr_or_lf_whatever_the_pieces_the_body_arrives_in(server):
    r = call({"endpoint": f"{server.url}/sse-endings", "stream": True, "stream_mapping": {"delta": "$.delta.text"}})
    assert r.output.final_answer == "Paris\u2028 €"
    assert r.metrics.stream_completed is True and r.metrics.stream_chunks == 3


def test_raw_chunks_are_appended_and_complete_when_the_body_ends(server):
    r = call({"endpoint": f"{server.url}/raw", "stream": True, "stream_format": "raw_chunks"})
    assert r.output.final_answer == "The answer is Paris"
    assert r.metrics.stream_completed is True and r.metrics.stream_chunks >= 1
    assert r.metrics.latency_first_token_ms > 0
    broken = call({"endpoint": f"{server.url}/raw-broken", "stream": True, "stream_format": "raw_chunks"})
    assert broken.metrics.stream_completed is False and broken.output.final_answer == "The answer "


def test_a_mapped_stream_over_the_cap_is_an_adapter_error(server):
    with pytest.raises(AdapterError, match="larger than 40 bytes"):
        call({"endpoint": f"{server.url}/jsonl", "stream": True, "stream_format": "json_lines",
              "stream_mapping": GENERIC_MAPPING, "max_response_bytes": 40})


# --- config ----------------------------------------------------------------------------------

E = "https://x.io"


@pytest.mark.parametrize("config, message", [
    ({"endpoint": E, "stream": True, "stream_format": "ndjson", "stream_mapping": {"delta": "$.t"}},
     "unknown stream_format 'ndjson'"),
    ({"endpoint": E, "stream": True, "provider": "simple"}, "not supported with provider 'simple'"),
    ({"endpoint": E, "stream": True, "provider": "openai_chat", "stream_format": "json_lines"},
     "streams server-sent events"),
    ({"endpoint": E, "stream": True, "provider": "gemini", "stream_mapping": {"delta": "$.t"}},
     "stream_mapping is for streams without a provider"),
    ({"endpoint": E, "stream": True, "stream_format": "json_lines"}, "needs stream_mapping.delta"),
    ({"endpoint": E, "stream": True, "stream_format": "raw_chunks", "stream_mapping": {"delta": "$.t"}},
     "raw_chunks appends plain text"),
    ({"endpoint": E, "stream_format": "sse"}, "only apply with stream: true"),
    ({"endpoint": E, "stream": True, "stream_mapping": {"delta": "$.t", "text": "$.x"}},
     "unknown stream_mapping key 'text'"),
    ({"endpoint": E, "stream": True, "stream_mapping": {"delta": "$[[["}}, "stream_mapping delta: invalid JSONPath"),
])
def test_stream_config_errors(config, message):
    with pytest.raises(ValidationError, match=message):
        HttpConfig.model_validate(config)


def test_stream_config_errors_surface_when_the_eval_loads(tmp_path):
    systems = """
  - name: base
    adapter: http
    endpoint: https://example.com/v1
    stream: true
    stream_format: websocket
    stream_mapping: {delta: $.t}
  - name: candidate
    adapter: http
    endpoint: https://example.com/v1
    provider: simple
    stream: true
"""
    path = write_eval(tmp_path / "toy", cases=1, systems=systems)
    with pytest.raises(ConfigError) as info:
        load_eval(path)
    text = str(info.value)
    assert "unknown stream_format 'websocket'" in text
    assert "not supported with provider 'simple'" in text
