"""The otel store exports each trace as a span over OTLP/HTTP, to a real receiver on loopback."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.support.evalh_process import run_evalh

from tests.support.evals import write_eval
from tests.support.http_server import FakeHandler, HandlerServer

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class Receiver:
    """An OTLP/HTTP receiver that decodes every ExportTraceServiceRequest it is sent."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(FakeHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.body_bytes()
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.requests.append(request)
                receiver.paths.append(self.path)
                self.send_bytes(status, ExportTraceServiceResponse().SerializeToString(),
                                content_type="application/x-protobuf")

        self._handler = Handler
        self._server: HandlerServer | None = None
        self.url = ""  # set while served

    def spans(self) -> list:
        return [span for request in self.requests for rs in request.resource_spans
                for ss in rs.scope_spans for span in ss.spans]

    def __enter__(self) -> Receiver:
        self._server = HandlerServer(self._handler)
        self.url = self._server.url
        return self

    def __exit__(self, *exc) -> None:
        assert self._server is not None
        self._server.close()


def _attrs(span) -> dict:
    out = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


SYSTEMS = """
  - name: base
    adapter: python_function
    target: stub_agent:run
    metadata: {model: stub-model-1}
  - name: candidate
    adapter: python_function
    target: stub_agent:run
"""


def test_each_trace_becomes_one_span_with_genai_attributes_and_its_id_on_the_trace(tmp_path, env):
    with Receiver() as receiver:
        path = write_eval(tmp_path / "toy", cases=3, systems=SYSTEMS, extra_yaml=f"""  - type: otel
    endpoint: {receiver.url}
    service_name: evalh-tests
    run_namespace: {{project: a}}
""")
        cases = (tmp_path / "toy" / "cases.jsonl").read_text().splitlines()
        broken = json.loads(cases[0])
        broken["input"]["explode"] = ["candidate"]
        (tmp_path / "toy" / "cases.jsonl").write_text("\n".join([json.dumps(broken), *cases[1:]]) + "\n")
        proc = run_evalh(["run", str(path)], env, tmp_path)
        assert proc.returncode == 0, proc.stderr

    (run_dir,) = (tmp_path / "toy" / "runs").iterdir()
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    everything = receiver.spans()
    spans = [span for span in everything if not span.parent_span_id]
    tools = [span for span in everything if span.name.startswith("execute_tool")]
    verdicts = [span for span in everything if span.name.startswith("evaluate ")]
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    assert len(spans) == len(traces) == 6  # exported once, though the store was synced after every stage
    by_id = {span.span_id.hex(): span for span in spans}
    # One child span per tool call, under its trace's span.
    assert len(tools) == sum(len(t["tool_calls"]) for t in traces) == 5
    for tool in tools:
        parent = by_id[tool.parent_span_id.hex()]
        assert tool.trace_id == parent.trace_id and tool.name == "execute_tool lookup"
        assert _attrs(tool)["gen_ai.tool.name"] == "lookup"
    for trace in traces:
        span = by_id[trace["extra"]["span_id"]]
        assert span.trace_id.hex() == trace["extra"]["otel_trace_id"]
        attrs = _attrs(span)
        assert attrs["gen_ai.operation.name"] == "invoke_agent"
        assert attrs["gen_ai.agent.name"] == trace["variant_name"]
        assert attrs["evalh.case_id"] == trace["case_id"] and attrs["evalh.namespace.project"] == "a"
        assert (span.end_time_unix_nano - span.start_time_unix_nano) // 1_000_000 in (
            trace["latency_ms"] - 1, trace["latency_ms"], trace["latency_ms"] + 1)
        if trace["error"]:
            assert span.status.code == 2 and attrs["error.type"] == trace["error"]["type"]
            assert "gen_ai.usage.input_tokens" not in attrs
        else:
            assert attrs["gen_ai.usage.input_tokens"] == 10 and attrs["gen_ai.usage.output_tokens"] == 5
        assert ("gen_ai.request.model" in attrs) == (trace["variant_name"] == "base")
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(verdicts) == len(results) == 12  # 6 cells x 2 evaluators, each once
    span_of = {(t["case_id"], t["variant_name"]): t["extra"]["span_id"] for t in traces}
    got = sorted((s.parent_span_id.hex(), _attrs(s)["evalh.evaluator"], _attrs(s)["evaluation.passed"]) for s in verdicts)
    assert got == sorted((span_of[(r["case_id"], r["variant_name"])], r["evaluator"], r["passed"]) for r in results)
    assert all(v.trace_id == by_id[v.parent_span_id.hex()].trace_id for v in verdicts)
    resource = {kv.key: kv.value.string_value for kv in receiver.requests[0].resource_spans[0].resource.attributes}
    assert resource["service.name"] == "evalh-tests"


def test_a_receiver_that_refuses_spans_is_recorded_and_warned_about_never_fatal(tmp_path, env):
    with Receiver(status=400) as receiver:
        path = write_eval(tmp_path / "toy", cases=2, extra_yaml=f"""  - type: otel
    endpoint: {receiver.url}/v1/traces
    timeout_seconds: 2
""")
        proc = run_evalh(["run", str(path)], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and f"otel {receiver.url}/v1/traces not updated" in proc.stderr
    (run_dir,) = (tmp_path / "toy" / "runs").iterdir()
    failures = [json.loads(line) for line in (run_dir / "publish.jsonl").read_text().splitlines()]
    assert failures and all(f["target"] == f"otel {receiver.url}/v1/traces" and not f["ok"] for f in failures)
    assert (run_dir / "summary.yaml").exists()
