"""The bundled http_agent example: its service as a real subprocess, the engine in-process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.request

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.paths import REPO
from tests.support.http_server import free_port

EXAMPLE = REPO / "evals" / "http_agent"


def _wait_healthy(port: int, proc: subprocess.Popen, timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"service.py exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as resp:
                if json.load(resp) == {"ok": True}:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("service.py did not become healthy")


@pytest.fixture
def service(monkeypatch):
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(EXAMPLE / "service.py"), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_healthy(port, proc)
        monkeypatch.setenv("HTTP_AGENT_PORT", str(port))
        yield port
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


def test_the_example_loads_without_the_service(monkeypatch):
    monkeypatch.setenv("HTTP_AGENT_PORT", str(free_port()))  # nothing listens there
    spec = load_eval(EXAMPLE / "eval.yaml")
    assert spec.variant_names == ["agent_simple", "agent_chat"]


def test_both_shapes_of_the_service_are_evaluated(service, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the eval's default output (./runs) lands here
    spec = load_eval(EXAMPLE / "eval.yaml")
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    summary = write_summary(spec, info.run_dir)

    variants = {v.name: v for v in summary.variants}
    assert variants["agent_simple"].cases_total == 6
    assert variants["agent_simple"].cases_errored == 0
    assert variants["agent_simple"].pass_rate == pytest.approx(1.0)
    # The chat endpoint's stub model skips the suburb average for Fitzroy: 5 of 6.
    assert variants["agent_chat"].cases_errored == 0
    assert variants["agent_chat"].pass_rate == pytest.approx(5 / 6)

    traces = [json.loads(line) for line in info.run_dir.traces.read_text().splitlines()]
    chat = [t for t in traces if t["variant_name"] == "agent_chat"]
    assert all(t["metrics"]["token_input"] and t["metrics"]["token_output"] for t in chat)
    assert all(t["tool_calls"] and t["tool_calls"][0]["name"] == "get_listing_details" for t in traces)
    fitzroy = next(t for t in chat if t["case_id"] == "listing_fitzroy_1")
    assert "average" not in fitzroy["output"]["final_answer"]
