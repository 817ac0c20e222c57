"""The bundled judged_answers example: the fake judge server as a real process, the eval through `evalh`."""

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
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evalh_process import run_evalh
from tests.support.paths import REPO
from tests.support.http_server import free_port

EXAMPLE = REPO / "evals" / "judged_answers"
JUDGED = {"answer_quality", "thinking_keeps_instructions"}


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=2) as resp:
        return json.load(resp)


@pytest.fixture
def judge_url():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.fake_judge_server", "--port", str(port)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"fake judge exited with {proc.returncode}: {proc.stderr.read()}")
            try:
                if _get(f"{url}/health") == {"ok": True}:
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


def _results(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def _cached(result: dict) -> bool:
    detail = result["detail"]
    return detail["cached"] if "cached" in detail else detail["judge"]["cached"]


def test_the_example_loads_and_runs_with_the_judge_down(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALH_JUDGE_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    monkeypatch.chdir(tmp_path)
    spec = load_eval(EXAMPLE / "eval.yaml")
    assert spec.variant_names == ["advisor_v1", "advisor_terse"]
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    results = _results(run_dir.path)
    assert len(results) == 30  # 5 cases x 2 variants x 3 evaluators: the run finished
    judged = [r for r in results if r["evaluator"] == "answer_quality"]
    assert all(not r["passed"] and "judge call to" in r["error"]["message"] for r in judged)


def test_the_judged_eval_runs_through_evalh_and_re_evaluates_from_the_cache(judge_url, env, tmp_path):
    env = {**env, "EVALH_JUDGE_URL": judge_url}
    proc = run_evalh(["run", str(EXAMPLE / "eval.yaml")], env, tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "runs").glob("*_judged_answers"))
    first = [r for r in _results(run_dir) if r["evaluator"] in JUDGED]
    calls = _get(f"{judge_url}/stats")["calls"]
    # Both variants think alike on four cases: an identical thinking prompt may already hit the cache.
    assert calls + sum(_cached(r) for r in first) == 20

    by_cell = {(r["variant_name"], r["case_id"], r["evaluator"]): r for r in first}
    assert all(r["error"] is None for r in first)
    assert all(r["passed"] for (variant, _, _), r in by_cell.items() if variant == "advisor_v1")
    terse_failures = sorted(key[1:] for key, r in by_cell.items() if key[0] == "advisor_terse" and not r["passed"])
    assert terse_failures == [("carlton_ghi789", "thinking_keeps_instructions"),
                              ("fitzroy_jkl012", "answer_quality"),
                              ("richmond_abc123", "answer_quality"),
                              ("richmond_mno345", "answer_quality")]
    richmond = by_cell[("advisor_terse", "richmond_abc123", "answer_quality")]
    assert richmond["detail"]["rubric"]["score"] == 2 and richmond["score"] == 0.5
    assert richmond["detail"]["cost_usd"] > 0 and richmond["detail"]["judge_backend"] == "openai_compatible"
    leak = by_cell[("advisor_terse", "carlton_ghi789", "thinking_keeps_instructions")]
    assert leak["detail"]["judge"]["judge_backend"] == "anthropic"

    # Nothing changed: re-evaluate keeps every result as it is.
    kept = run_dir.joinpath("results.jsonl").read_bytes()
    proc = run_evalh(["re-evaluate", str(run_dir)], env, tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "re-judged 0 result(s) (changed evaluators: none; 0 new trace(s))" in proc.stdout
    assert run_dir.joinpath("results.jsonl").read_bytes() == kept

    proc = run_evalh(["re-evaluate", "--all", str(run_dir)], env, tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert _get(f"{judge_url}/stats")["calls"] == calls  # every verdict came from the cache

    def verdicts(results):
        return sorted((r["variant_name"], r["case_id"], r["evaluator"], r["passed"], r["score"], r["reason"])
                      for r in results)
    again = [r for r in _results(run_dir) if r["evaluator"] in JUDGED]
    assert verdicts(again) == verdicts(first)
    assert all(_cached(r) for r in again)
