"""Post-capture steps: TraceEnrichers (a real loopback service) and tool views derived from messages."""

from __future__ import annotations

import asyncio
import json

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.enrichers.base import EnricherContext, TraceEnricher, build_enrichers, enrich_trace
from evalh_pipeline.enrichers.registry import ENRICHERS
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval
from tests.support.http_server import FakeHandler, HandlerServer

AGENT = '''
def run(case, variant):
    number = int(case["id"].split("_")[-1])
    return {
        "final_answer": case["input"]["answer"],
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_call": {"name": "lookup", "arguments": {"q": case["id"]}}},
            {"role": "tool", "name": "lookup", "content": {"hit": number}},
            {"role": "assistant", "content": case["input"]["answer"]},
        ],
        "extra": {"trace_id": f"up-{number}"} if number != 3 else {},
    }
'''


class Upstream:
    """A trace platform's read API on loopback: /traces/<id> answers JSON, up-2 answers 500."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        upstream = self

        class Handler(FakeHandler):
            def do_GET(self) -> None:  # noqa: N802
                upstream.seen.append(self.path)
                trace_id = self.path.rsplit("/", 1)[-1]
                if trace_id == "up-2":
                    self.send_response(500)
                    self.end_headers()
                    return
                self.send_json(200, {"id": trace_id, "usage": {"input": 111, "output": 22},
                                     "latency": 0.5, "auth": self.headers.get("authorization")})

        self.server = HandlerServer(Handler)
        self.url = self.server.url

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def upstream():
    server = Upstream()
    yield server
    server.close()


def _eval(tmp_path, upstream_url: str, monkeypatch):
    systems = f"""
  - name: base
    adapter: python_function
    target: enriched_agent:run
    enrich_trace_from:
      - type: http
        url: "{upstream_url}/api/traces/{{{{ trace.extra.trace_id }}}}"
        headers: {{authorization: "Bearer ${{UPSTREAM_TOKEN}}"}}
        merge:
          metrics.token_input: $.usage.input
          metrics.token_output: $.usage.output
          extra.upstream_latency_s: $.latency
  - name: candidate
    adapter: python_function
    target: enriched_agent:run
"""
    path = write_eval(tmp_path / "toy", cases=4, systems=systems)
    (tmp_path / "toy" / "enriched_agent.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path / "toy"))
    monkeypatch.setenv("UPSTREAM_TOKEN", "s3cret-token")
    return path


def test_enrichers_merge_upstream_fields_and_failures_never_fail_the_cell(tmp_path, upstream, monkeypatch):
    spec = load_eval(_eval(tmp_path, upstream.url, monkeypatch))
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))

    traces = {(t["case_id"], t["variant_name"]): t
              for t in map(json.loads, info.run_dir.traces.read_text().splitlines())}
    assert all(t["error"] is None for t in traces.values())
    good = traces[("case_1", "base")]
    assert (good["metrics"]["token_input"], good["metrics"]["token_output"]) == (111, 22)
    assert good["extra"]["upstream_latency_s"] == 0.5 and "enrichment_errors" not in good["extra"]
    failed = traces[("case_2", "base")]
    assert failed["metrics"]["token_input"] is None
    assert failed["extra"]["enrichment_errors"][0]["enricher"] == "http"
    assert "HTTP 500" in failed["extra"]["enrichment_errors"][0]["error"]
    missing = traces[("case_3", "base")]
    assert "trace has no such field" in missing["extra"]["enrichment_errors"][0]["error"]
    # Only the configured variant is enriched; the token reached the service, never the run directory.
    assert "enrichment_errors" not in traces[("case_2", "candidate")]["extra"]
    assert traces[("case_1", "candidate")]["metrics"]["token_input"] is None
    assert sorted(upstream.seen) == ["/api/traces/up-0", "/api/traces/up-1", "/api/traces/up-2"]
    assert "s3cret-token" not in "".join(p.read_text() for p in info.run_dir.path.rglob("*") if p.is_file())


def test_tool_views_are_derived_from_messages(tmp_path, upstream, monkeypatch):
    spec = load_eval(_eval(tmp_path, upstream.url, monkeypatch))
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    trace = json.loads(info.run_dir.traces.read_text().splitlines()[0])
    assert [c["name"] for c in trace["tool_calls"]] == ["lookup"]
    assert trace["tool_results"][0]["name"] == "lookup" and "hit" in trace["tool_results"][0]["content"]


def test_disagreeing_tool_views_are_recorded():
    from datetime import datetime, timezone

    from evalh_pipeline.models import Trace
    from evalh_pipeline.runner.tool_views import apply_tool_views

    now = datetime.now(timezone.utc)
    trace = Trace(run_id="r", case_id="c", variant_name="v", started_at=now, finished_at=now, latency_ms=0,
                  messages=[{"role": "assistant", "tool_call": {"name": "search", "arguments": {}}}],
                  tool_calls=[{"name": "lookup", "arguments": {}}])
    apply_tool_views(trace)
    assert [c.name for c in trace.tool_calls] == ["lookup"]  # what the system reported is kept
    assert trace.extra["tool_views_disagree"]["tool_calls"] == {"reported": ["lookup"], "in_messages": ["search"]}


def test_an_unknown_enricher_type_or_key_is_a_config_error_with_its_line(tmp_path, monkeypatch):
    path = _eval(tmp_path, "http://127.0.0.1:9", monkeypatch)
    text = path.read_text()
    path.write_text(text.replace("type: http", "type: langfuse", 1))
    with pytest.raises(ConfigError, match=r"systems\[0\]\.enrich_trace_from\[0\]\.type.*unknown enricher 'langfuse'"):
        load_eval(path)
    path.write_text(text.replace("merge:", "murge:", 1))
    with pytest.raises(ConfigError, match=r"murge.*unknown key"):
        load_eval(path)


def test_a_plugin_enricher_registers_and_a_crash_restores_the_trace():
    from datetime import datetime, timezone

    from evalh_pipeline.models import EvalCase, Trace

    class Boom(TraceEnricher):
        async def enrich(self, case, trace):
            trace.output.final_answer = "half-written"
            raise ValueError("upstream gone")

    ENRICHERS.register("boom", Boom)
    try:
        chain = build_enrichers([{"type": "boom"}], EnricherContext(eval_dir=__import__("pathlib").Path(".")))
        now = datetime.now(timezone.utc)
        trace = Trace(run_id="r", case_id="c", variant_name="v", started_at=now, finished_at=now, latency_ms=0,
                      output={"final_answer": "kept"})
        asyncio.run(enrich_trace(chain, EvalCase(id="c", input={}), trace))
    finally:
        ENRICHERS.unregister("boom")
    assert trace.output.final_answer == "kept"
    assert trace.extra["enrichment_errors"] == [{"enricher": "boom", "error": "ValueError: upstream gone"}]


def test_trace_capture_keeps_only_the_listed_parts(tmp_path, upstream, monkeypatch):
    path = _eval(tmp_path, upstream.url, monkeypatch)
    path.write_text(path.read_text() + "trace:\n  capture: [final_answer, tool_calls, latency]\n")
    spec = load_eval(path)
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    trace = json.loads(info.run_dir.traces.read_text().splitlines()[0])
    assert trace["output"]["final_answer"] and [c["name"] for c in trace["tool_calls"]] == ["lookup"]
    assert trace["messages"] == [] and trace["tool_results"] == []
    assert trace["latency_ms"] >= 0 and trace["started_at"]


def test_an_unknown_capture_item_is_a_load_error_naming_the_allowed_ones(tmp_path, upstream, monkeypatch):
    path = _eval(tmp_path, upstream.url, monkeypatch)
    path.write_text(path.read_text() + "trace:\n  capture: [final_answer, spans]\n")
    with pytest.raises(ConfigError, match=r"trace\.capture\[1\].*'final_answer'.*'streaming'"):
        load_eval(path)
