"""http: a real HTTP server on 127.0.0.1 speaking provider shapes, misbehaving on demand."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter

import pytest
from pydantic import ValidationError

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.config.errors import ConfigError
from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.run_dir import new_run_id
from evalh_pipeline.systems.base import AdapterError, SystemContext, SystemResponse
from evalh_pipeline.systems.http import HttpConfig, HttpSystem
from evalh_pipeline.systems.http_presets import split_think_blocks
from tests.support.evals import write_eval
from tests.support.http_server import FakeHandler, port_of, serve_connections, serving_handler

CASE = EvalCase(id="c1", input={"user_message": 'Capital of "France"?\n}', "n": 3, "tags": ["a", "b"]})

OPENAI = {
    "id": "chatcmpl-1",
    "choices": [{"message": {
        "role": "assistant", "content": "Paris.",
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "lookup", "arguments": "{\"q\": \"capital\"}"}}],
    }}],
    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "completion_tokens_details": {"reasoning_tokens": 4}},
}
ANTHROPIC = {
    "id": "msg_1",
    "content": [
        {"type": "thinking", "thinking": "The user asks about France."},
        {"type": "text", "text": "Paris"},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "france"}},
        {"type": "text", "text": " is the capital."},
    ],
    "usage": {"input_tokens": 20, "output_tokens": 9},
}
GEMINI = {
    "candidates": [{"content": {"role": "model", "parts": [
        {"text": "Thinking about capitals.", "thought": True},
        {"text": "Paris"},
        {"functionCall": {"name": "lookup", "args": {"q": "fr"}}},
    ]}}],
    "usage_metadata": {"prompt_token_count": 5, "candidates_token_count": 3, "thoughts_token_count": 12},
}
DEEPSEEK = {
    "id": "ds-1",
    "choices": [{"message": {"role": "assistant", "content": "<think>\nFrance... Paris.\n</think>\n\nParis"}}],
    "usage": {"prompt_tokens": 4, "completion_tokens": 30},
}


def _delta(**delta):
    return {"id": "chatcmpl-s", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}


SSE_EVENTS = [
    _delta(role="assistant", content=""),
    _delta(content="Par"),
    None,  # an SSE comment line
    _delta(content="is"),
    _delta(tool_calls=[{"index": 0, "id": "call_9", "type": "function",
                        "function": {"name": "lookup", "arguments": "{\"q\": "}}]),
    _delta(tool_calls=[{"index": 0, "function": {"arguments": "\"fr\"}"}}]),
    {"id": "chatcmpl-s", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}},
]


class Backend:
    """What the fake server saw and how often; the handler reads paths to pick a behaviour."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()


def make_handler(backend: Backend):
    class Handler(FakeHandler):
        def _send(self, status: int, body: bytes, content_type: str = "application/json", length: bool = True):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _json(self, value, status: int = 200):
            self._send(status, json.dumps(value).encode())

        def _sse(self, cut: bool):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in SSE_EVENTS[:3] if cut else SSE_EVENTS:
                self.wfile.write(b": keep-alive\n" if event is None else f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.05)
            if not cut:
                self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

        def do_GET(self):
            self.do_POST()

        def do_PUT(self):
            self.do_POST()

        def do_POST(self):
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size) if size else b""
            body = json.loads(raw) if raw else None
            path, _, query = self.path.partition("?")
            # The simple preset sends {"input": ...}; the toy cases' inputs say "answer <i> Paris".
            answer_text = str(((body or {}).get("input") or {}).get("answer", "")) if isinstance(body, dict) else ""
            key = f"{path}:case_{answer_text.split()[1]}" if answer_text.count(" ") == 2 else path
            with backend.lock:
                backend.requests.append({"path": path, "query": query, "body": body, "method": self.command,
                                         "headers": dict(self.headers)})
                backend.hits[key] += 1
                hits = backend.hits[key]
            if path == "/simple":
                self._json({"output": f"answer for {body['input'].get('answer', body['input'])}"})
            elif path == "/echo":
                self._json({"answer": "ok", "received": body})
            elif path == "/plain":  # no mapping: read like a python_function return value
                self._json({"final_answer": "plain Paris", "tool_calls": [{"name": "lookup", "arguments": {}}],
                            "metrics": {"token_input": 3}})
            elif path == "/openai":
                self._json(OPENAI)
            elif path == "/anthropic":
                self._json(ANTHROPIC)
            elif path == "/gemini":
                self._json(GEMINI)
            elif path == "/deepseek":
                self._json(DEEPSEEK)
            elif path == "/flaky":  # 500 on the first call for each case, then fine
                if hits == 1:
                    self._json({"error": "overloaded"}, status=500)
                else:
                    self._json({"output": f"answer for {body['input']['answer']}"})
            elif path == "/slow":
                time.sleep(2)
                self._json({"output": "too late"})
            elif path in ("/openai-stream", "/openai-stream-cut"):
                self._sse(cut=path.endswith("-cut"))
            elif path == "/leaky":  # an error body that echoes the credential back
                self._json({"error": f"bad key {self.headers.get('Authorization')}"}, status=401)
            elif path == "/bad-json":
                self._send(200, b'{"answer": "Paris", oops')
            elif path == "/html":
                self._send(200, b"<html><body>Login required</body></html>", content_type="text/html")
            elif path == "/huge":  # no Content-Length: the cap must hold while streaming
                self._send(200, b'{"answer": "' + b"x" * 50_000 + b'"}', length=False)
                self.close_connection = True
            elif path == "/huge-declared":
                self._send(200, b'{"answer": "' + b"x" * 50_000 + b'"}')
            else:
                self._json({"error": {"message": f"no route {path}"}}, status=404)

    return Handler


@pytest.fixture
def server():
    backend = Backend()
    with serving_handler(make_handler(backend)) as url:
        backend.url = url
        yield backend


def adapter(config: dict, secret_values: frozenset[str] = frozenset()) -> HttpSystem:
    variant = RunVariant(name="v1", adapter="http", config=config)
    return HttpSystem(variant, SystemContext(eval_dir=".", max_concurrency=2, secret_values=secret_values))


def call(config: dict, case: EvalCase = CASE, **kwargs) -> SystemResponse:
    async def go():
        system = adapter(config, **kwargs)
        await system.start()
        try:
            return await system.run(case, None)
        finally:
            await system.close()
    return asyncio.run(go())


# --- requests ------------------------------------------------------------------------------


def test_request_template_renders_json_safely_and_whole_templates_keep_their_type(server):
    call({"endpoint": f"{server.url}/echo", "response_mapping": {"final_answer": "$.answer"},
          "body": {"static": True, "nested": {"a": 1}},
          "request_template": {"q": "{{ case.input.user_message }}", "n": "{{ case.input.n }}",
                               "tags": "{{case.input.tags}}", "text": "n={{ case.input.n }} id={{ case.id }}",
                               "nested": {"b": ["{{ case.input.n }}"]}}})
    sent = server.requests[-1]
    assert sent["method"] == "POST"
    assert sent["body"] == {"static": True, "q": CASE.input["user_message"], "n": 3, "tags": ["a", "b"],
                            "text": "n=3 id=c1", "nested": {"a": 1, "b": [3]}}


def test_default_body_headers_query_params_and_method(server):
    call({"endpoint": f"{server.url}/echo", "method": "put", "headers": {"Authorization": "Bearer sk-secret-1"},
          "query_params": {"mode": "fast", "k": 2}, "response_mapping": {"final_answer": "$.answer"}})
    sent = server.requests[-1]
    assert sent["method"] == "PUT" and sent["query"] == "mode=fast&k=2"
    assert sent["headers"]["Authorization"] == "Bearer sk-secret-1"
    assert sent["body"] == CASE.input  # eval-harness: the static body (none here) with the input on top


def test_query_params_add_to_the_endpoints_own_query_string(server):
    call({"endpoint": f"{server.url}/echo?api-version=2024-06-01&mode=slow",
          "query_params": {"mode": "fast", "k": 2}, "response_mapping": {"final_answer": "$.answer"}})
    assert server.requests[-1]["query"] == "api-version=2024-06-01&mode=fast&k=2"


def test_without_template_the_static_body_is_merged_with_the_case_input(server):
    call({"endpoint": f"{server.url}/echo", "body": {"mode": "eval", "n": 0},
          "response_mapping": {"final_answer": "$.answer"}})
    assert server.requests[-1]["body"] == {"mode": "eval", **CASE.input}


def test_a_string_template_is_rendered_then_parsed_as_json(server):
    response = call({"endpoint": f"{server.url}/echo", "body": {"static": 1},
                     "response_mapping": {"final_answer": "$.answer"},
                     "request_template": '{"q": {{ input.user_message | json }}, "id": "{{ case_id }}", '
                                         '"n": {{ input.n }}, "tags": {{ case.input.tags }}, '
                                         '"m": {{ case.metadata.region | json }}, "all": {{ input | json }}}'},
                    case=EvalCase(id="c1", input=CASE.input, metadata={"region": "eu"}))
    assert response.output.final_answer == "ok"
    assert server.requests[-1]["body"] == {"static": 1, "q": CASE.input["user_message"], "id": "c1", "n": 3,
                                           "tags": ["a", "b"], "m": "eu", "all": CASE.input}


def test_a_string_template_that_is_not_json_after_rendering_fails_the_cell(server):
    # eval-harness renders strings raw: a quote in the value breaks the JSON unless `| json` is used.
    with pytest.raises(AdapterError, match="request_template did not render to valid JSON"):
        call({"endpoint": f"{server.url}/echo", "response_mapping": {"final_answer": "$.answer"},
              "request_template": '{"q": "{{ input.user_message }}"}'})


def test_a_string_template_renders_a_missing_field_empty_as_eval_harness(server):
    call({"endpoint": f"{server.url}/echo", "response_mapping": {"final_answer": "$.answer"},
          "request_template": '{"q": "{{ input.nope }}", "j": {{ case.metadata.nope | json }}}'})
    assert server.requests[-1]["body"] == {"q": "", "j": None}


def test_get_sends_no_body_by_default(server):
    call({"endpoint": f"{server.url}/echo?x=1", "method": "GET", "response_mapping": {"final_answer": "$.answer"}})
    sent = server.requests[-1]
    assert sent["method"] == "GET" and sent["body"] is None and sent["query"] == "x=1"


def test_a_template_path_the_case_lacks_fails_the_cell(server):
    with pytest.raises(AdapterError, match=r"case 'c1' has no field for template \{\{ case.input.nope \}\}"):
        call({"endpoint": f"{server.url}/echo", "request_template": {"q": "{{ case.input.nope }}"}})


def test_without_mapping_the_response_is_read_like_a_python_function_return(server):
    response = call({"endpoint": f"{server.url}/plain"})
    assert response.output.final_answer == "plain Paris"
    assert response.tool_calls[0].name == "lookup" and response.metrics.token_input == 3
    assert response.extra == {"http_status": 200}


def test_header_values_never_reach_the_response(server):
    response = call({"endpoint": f"{server.url}/plain", "headers": {"X-Api-Key": "sk-very-secret"}})
    assert "sk-very-secret" not in response.model_dump_json()


# --- presets -------------------------------------------------------------------------------


def test_simple_preset(server):
    response = call({"endpoint": f"{server.url}/simple", "provider": "simple", "model": "m1"})
    assert response.output.final_answer.startswith("answer for ")
    assert server.requests[-1]["body"] == {"input": CASE.input, "model": "m1"}  # eval-harness's simple shape


def test_openai_chat_preset(server):
    response = call({"endpoint": f"{server.url}/openai", "provider": "openai_chat", "model": "gpt-x",
                     "temperature": 0})
    sent = server.requests[-1]["body"]
    assert sent == {"model": "gpt-x", "temperature": 0,
                    "messages": [{"role": "user", "content": CASE.input["user_message"]}]}
    assert response.output.final_answer == "Paris." and response.output.thinking is None
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [("call_1", "lookup", {"q": "capital"})]
    m = response.metrics
    assert (m.token_input, m.token_output, m.token_thinking) == (11, 7, 4)
    assert response.extra["trace_id"] == "chatcmpl-1"


def test_openai_chat_preset_takes_case_messages(server):
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    call({"endpoint": f"{server.url}/openai", "provider": "openai_chat", "model": "gpt-x"},
         case=EvalCase(id="m", input={"messages": messages}))
    assert server.requests[-1]["body"]["messages"] == messages


def test_openai_chat_preset_without_messages_fails_the_cell(server):
    with pytest.raises(AdapterError, match="has no messages"):
        call({"endpoint": f"{server.url}/openai", "provider": "openai_chat"}, case=EvalCase(id="x", input={}))


def test_anthropic_messages_preset_separates_thinking_text_and_tool_use(server):
    response = call({"endpoint": f"{server.url}/anthropic", "provider": "anthropic_messages",
                     "model": "claude-x", "max_tokens": 50, "headers": {"x-api-key": "k"}})
    sent = server.requests[-1]
    assert sent["body"]["model"] == "claude-x" and sent["body"]["max_tokens"] == 50
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    assert response.output.final_answer == "Paris\n is the capital."  # text blocks joined by a newline, as eval-harness
    assert response.output.thinking == "The user asks about France."
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [("toolu_1", "lookup", {"q": "france"})]
    assert (response.metrics.token_input, response.metrics.token_output) == (20, 9)


def test_gemini_preset_thought_parts_are_thinking(server):
    response = call({"endpoint": f"{server.url}/gemini", "provider": "gemini", "model": "gemini-x"})
    sent = server.requests[-1]["body"]
    assert sent == {"contents": [{"role": "user", "parts": [{"text": CASE.input["user_message"]}]}]}
    assert response.output.final_answer == "Paris"
    assert response.output.thinking == "Thinking about capitals."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("lookup", {"q": "fr"})]
    m = response.metrics
    assert (m.token_input, m.token_output, m.token_thinking) == (5, 3, 12)


def test_deepseek_preset_strips_inline_think_blocks_into_thinking(server):
    response = call({"endpoint": f"{server.url}/deepseek", "provider": "deepseek", "model": "deepseek-reasoner"})
    assert response.output.final_answer == "Paris"
    assert response.output.thinking == "France... Paris."
    assert "<think>" not in response.output.final_answer


@pytest.mark.parametrize("text, expected", [
    ("plain", ("plain", None)),
    ("<think>a</think>b<think>c</think> d", ("b d", "a\n\nc")),
    ("partial</think>answer", ("answer", "partial")),
    ("answer <think>cut off", ("answer", "cut off")),
])
def test_split_think_blocks(text, expected):
    assert split_think_blocks(text) == expected


def test_user_mapping_overrides_the_preset(server):
    response = call({"endpoint": f"{server.url}/openai", "provider": "openai_chat",
                     "response_mapping": {"final_answer": "$.choices[0].message.role", "cost": "$.usage.prompt_tokens",
                                          "structured": "$.usage"}})
    assert response.output.final_answer == "assistant"
    assert response.metrics.cost_usd == 11.0 and response.output.structured["prompt_tokens"] == 11
    assert response.metrics.token_output == 7  # the rest of the preset mapping stays


# --- streaming -----------------------------------------------------------------------------


def test_openai_sse_stream_is_assembled_and_timed(server):
    response = call({"endpoint": f"{server.url}/openai-stream", "provider": "openai_chat", "model": "gpt-x",
                     "stream": True})
    sent = server.requests[-1]["body"]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert response.output.final_answer == "Paris"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [("call_9", "lookup", {"q": "fr"})]
    m = response.metrics
    assert (m.token_input, m.token_output) == (9, 4)
    assert m.stream_completed is True and m.stream_chunks == 6
    assert 0 < m.latency_first_token_ms < m.latency_last_token_ms
    assert m.tokens_per_second and m.tokens_per_second > 0
    assert response.extra["trace_id"] == "chatcmpl-s"


def test_a_cut_off_stream_keeps_what_arrived_and_is_not_completed(server):
    response = call({"endpoint": f"{server.url}/openai-stream-cut", "provider": "openai_chat", "stream": True})
    assert response.output.final_answer == "Par"
    assert response.metrics.stream_completed is False and response.metrics.stream_chunks == 2


def test_a_stream_over_the_cap_is_an_adapter_error(server):
    with pytest.raises(AdapterError, match="larger than 100 bytes"):
        call({"endpoint": f"{server.url}/openai-stream", "provider": "openai_chat", "stream": True,
              "max_response_bytes": 100})


# --- failures ------------------------------------------------------------------------------


def test_5xx_is_http_5xx_with_a_snippet(server):
    with pytest.raises(AdapterError, match="HTTP 500.*overloaded") as info:
        call({"endpoint": f"{server.url}/flaky", "provider": "simple"}, case=EvalCase(id="x", input={"answer": 1}))
    assert info.value.type == "http_5xx" and info.value.partial.extra["http_status"] == 500


@pytest.mark.parametrize("path, message", [
    ("/nowhere", "HTTP 404.*no route"),
    ("/bad-json", "not valid JSON.*oops"),
    ("/html", "expected a JSON response, got content type 'text/html'.*Login required"),
    ("/huge", "larger than 1,000 bytes"),
    ("/huge-declared", "larger than 1,000 bytes"),
])
def test_bad_responses_are_adapter_errors(server, path, message):
    with pytest.raises(AdapterError, match=message) as info:
        call({"endpoint": f"{server.url}{path}", "provider": "simple", "max_response_bytes": 1000})
    assert info.value.type == "adapter_error"


def test_known_secrets_are_masked_in_error_snippets(server):
    with pytest.raises(AdapterError, match="HTTP 401") as info:
        call({"endpoint": f"{server.url}/leaky", "provider": "simple", "headers": {"Authorization": "Bearer sk-live-7"}},
             secret_values=frozenset({"sk-live-7"}))
    assert "sk-live-7" not in str(info.value) and "***MASKED***" in str(info.value)
    assert info.value.type == "adapter_error"


def test_network_errors_are_adapter_errors():
    with pytest.raises(AdapterError, match="HTTP request failed: ConnectError") as info:
        call({"endpoint": "http://127.0.0.1:9/nothing-listens-here", "provider": "simple"})
    assert info.value.type == "adapter_error"


def test_an_answer_that_is_not_http_is_an_adapter_error_with_the_secret_in_the_url_masked():
    async def go():
        async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"NOT HTTP AT ALL\r\n\r\n")
            await writer.drain()
            writer.close()

        server, url = await serve_connections(garbage)
        async with server:
            port = port_of(url)
            system = adapter({"endpoint": f"http://127.0.0.1:{port}/v1?key=sk-query-9", "provider": "simple"},
                             secret_values=frozenset({"sk-query-9"}))
            await system.start()
            try:
                return await system.run(CASE, None)
            finally:
                await system.close()

    with pytest.raises(AdapterError, match="HTTP request failed: RemoteProtocolError") as info:
        asyncio.run(go())
    assert "sk-query-9" not in str(info.value) and info.value.type == "adapter_error"


# --- config --------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:8000/x", "http://127.9.9.9/x", "http://[::1]:80/x",
                                      "http://localhost/x", "https://api.example.com/v1"])
def test_allowed_endpoints(endpoint):
    assert HttpConfig.model_validate({"endpoint": endpoint}).endpoint == endpoint


@pytest.mark.parametrize("config, message", [
    ({"endpoint": "http://api.example.com/v1"}, "plain http is only allowed to loopback"),
    ({"endpoint": "http://10.0.0.1/v1"}, "plain http is only allowed to loopback"),
    ({"endpoint": "ftp://localhost/x"}, "must be an http"),
    ({"endpoint": "https://x.io", "provider": "openai"}, "unknown provider 'openai' .known: simple, langserve_invoke, openai_chat"),
    ({"endpoint": "https://x.io", "response_mapping": {"answer": "$.a"}}, "unknown response_mapping key 'answer'"),
    ({"endpoint": "https://x.io", "response_mapping": {"final_answer": "$[[["}}, "invalid JSONPath"),
    ({"endpoint": "https://x.io", "request_template": {"q": "{{ inputs.q }}"}}, "unknown template"),
    ({"endpoint": "https://x.io", "stream": True}, "needs stream_mapping.delta"),
    ({"endpoint": "https://x.io", "stream": True, "provider": "simple"}, "not supported with provider 'simple'"),
])
def test_config_errors(config, message):
    with pytest.raises(ValidationError, match=message):
        HttpConfig.model_validate(config)


def test_config_errors_surface_when_the_eval_loads(tmp_path):
    systems = """
  - name: base
    adapter: http
    endpoint: http://example.com/v1
  - name: candidate
    adapter: http
    endpoint: https://example.com/v1
    provider: nope
"""
    path = write_eval(tmp_path / "toy", cases=1, systems=systems)
    with pytest.raises(ConfigError) as info:
        load_eval(path)
    text = str(info.value)
    assert "systems[0].endpoint" in text and "plain http is only allowed to loopback" in text
    assert "systems[1].provider" in text and "unknown provider 'nope'" in text


# --- end to end ----------------------------------------------------------------------------

E2E_SYSTEMS = """
  - name: base
    adapter: http
    endpoint: {url}/simple
    provider: simple
  - name: flaky
    adapter: http
    endpoint: {url}/flaky
    provider: simple
  - name: slow
    adapter: http
    endpoint: {url}/slow
    provider: simple
    timeout_seconds: 0.3
  - name: broken_json
    adapter: http
    endpoint: {url}/bad-json
    provider: simple
  - name: html
    adapter: http
    endpoint: {url}/html
    provider: simple
  - name: missing
    adapter: http
    endpoint: {url}/missing
    provider: simple
  - name: huge
    adapter: http
    endpoint: {url}/huge
    provider: simple
    max_response_bytes: 1000
"""


@pytest.mark.integration
def test_end_to_end_every_cell_is_a_trace_and_retries_follow_run_retry(tmp_path, server):
    path = write_eval(tmp_path / "toy", cases=2, systems=E2E_SYSTEMS.format(url=server.url))
    path.write_text(path.read_text().replace(
        "run:\n", "run:\n  retry: {max_attempts: 3, on: [http_5xx, timeout], backoff_seconds: 0.001}\n"))
    spec = load_eval(path)
    info = prepare_cases(spec, new_run_id(spec.name))
    stats = asyncio.run(produce_traces(spec, info.run_dir))
    traces = {(t["case_id"], t["variant_name"]): t for t in (json.loads(line) for _, line in iter_lines(info.run_dir.traces))}
    variants = ["base", "flaky", "slow", "broken_json", "html", "missing", "huge"]
    assert sorted(traces) == sorted((f"case_{i}", v) for i in range(2) for v in variants)
    assert stats.cells_run == 14

    def error(case, variant):
        return (traces[(case, variant)]["error"] or {}).get("type")

    for case in ("case_0", "case_1"):
        assert error(case, "base") is None
        assert traces[(case, "base")]["output"]["final_answer"] == f"answer for answer {case[-1]} Paris"
        # 500 once, then the runner's retry succeeds
        assert error(case, "flaky") is None
        assert traces[(case, "flaky")]["metrics"]["custom"]["attempts"] == 2
        assert server.hits[f"/flaky:{case}"] == 2
        assert error(case, "slow") == "timeout"
        assert traces[(case, "slow")]["metrics"]["custom"]["attempts"] == 3
        for variant in ("broken_json", "html", "missing", "huge"):
            assert error(case, variant) == "adapter_error", variant
            assert "attempts" not in traces[(case, variant)]["metrics"]["custom"]
        assert server.hits[f"/missing:{case}"] == 1  # 4xx is not retried
        assert traces[(case, "missing")]["extra"]["http_status"] == 404
