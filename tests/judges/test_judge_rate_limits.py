"""Judges meet rate limits as systems do: a 429 is waited out through the run's limiter, a
judge pool caps the calls in flight at the (bundled, loopback) judge server, and a judge that
never gets through errors `rate_limited`."""

from __future__ import annotations

import asyncio
import json

import pytest

from evalh_pipeline.common.context import EvaluatorContext
from evalh_pipeline.evaluators.llm_judge import LlmJudge
from evalh_pipeline.llm.chat import JudgeRateLimited
from tests.support.fake_judge_server import FakeJudgeServer
from evalh_pipeline.llm.openai_chat import OpenAICompatibleBackend
from evalh_pipeline.models import EvalCase, Trace
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.result_lines import raised
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval

pytestmark = pytest.mark.integration

CASE = EvalCase(id="c1", input={"user_message": "Where is the listing?"})
TRACE = Trace.model_validate({"run_id": "r", "case_id": "c1", "variant_name": "v", "started_at": "2026-01-01T00:00:00Z",
                              "finished_at": "2026-01-01T00:00:01Z", "latency_ms": 1000,
                              "output": {"final_answer": "It is in Richmond."}})


def _judge(url: str, **extra) -> LlmJudge:
    config = {"model": "judge-1", "backend": "openai_compatible", "base_url": url,
              "nl_assertions": ['mentions "Richmond"'], **extra}
    return LlmJudge("judged", "llm_judge", config, EvaluatorContext(env={}))


def test_a_429_from_the_judge_server_is_a_rate_limit_with_the_wait_it_asked_for():
    with FakeJudgeServer() as server:
        server.script("rate_limited")
        backend = OpenAICompatibleBackend(OpenAICompatibleBackend.settings_from(
            {}, model="judge-1", base_url=server.openai_base_url, api_key_env=None, timeout_seconds=30, max_tokens=64))
        with pytest.raises(JudgeRateLimited) as info:
            asyncio.run(backend.complete("s", "u", None))
    assert info.value.retry_after == 0.02 and "HTTP 429 (rate limited)" in str(info.value)


def test_a_judge_waits_out_several_rate_limits_and_gives_the_same_verdict():
    with FakeJudgeServer() as server:
        plain = asyncio.run(_judge(server.openai_base_url).evaluate(CASE, TRACE, None))
        server.script("rate_limited", "rate_limited", "rate_limited")
        judge = _judge(server.openai_base_url)
        limited = asyncio.run(judge.evaluate(CASE, TRACE, None))
        assert server.calls == 1 + 4
    assert (limited.passed, limited.score, limited.reason) == (plain.passed, plain.score, plain.reason) == (
        True, 1.0, plain.reason)
    assert judge.judge._limiter.stats.rate_limited == 3


def test_a_judge_that_never_gets_through_errors_rate_limited_within_its_timeout():
    with FakeJudgeServer() as server:
        server.script(*["rate_limited"] * 500)
        judge = _judge(server.openai_base_url, timeout_seconds=1)
        with pytest.raises(Exception) as info:
            asyncio.run(judge.evaluate(CASE, TRACE, None))
        calls = server.calls
    _, error = raised(judge, info.value)
    assert error.type == "rate_limited" and "fake judge: scripted rate limit" in error.message
    assert calls < 500  # it stopped at its timeout, not at the end of the script


JUDGES = """
  - name: first
    type: llm_judge
    config: {{model: judge-1, backend: openai_compatible, base_url: "{url}", nl_assertions: ['mentions "Paris"']{pool}}}
  - name: second
    type: llm_judge
    config: {{model: judge-1, backend: openai_compatible, base_url: "{url}", nl_assertions: ['mentions "answer"']{pool}}}
"""


def _judged_run(tmp_path, url: str, pool: bool):
    evaluators = JUDGES.format(url=url, pool=", pool: judges" if pool else "")
    path = write_eval(tmp_path, cases=10, evaluators=evaluators)
    text = path.read_text().replace("run:\n  max_concurrency: 4\n",
                                    "run:\n  max_concurrency: 8\n  executor:\n    pools: {judges: 2}\n")
    path.write_text(text)
    spec = load_eval(path, env={})
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir, ))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    results = sorted((r["case_id"], r["variant_name"], r["evaluator"], r["passed"], r["score"], r["reason"])
                     for r in map(json.loads, (line for _, line in iter_lines(info.run_dir.results))))
    records = [json.loads(line) for line in info.run_dir.rate_limits.read_text().splitlines()]
    return results, records


def test_a_judge_pool_shared_by_two_judges_caps_the_calls_in_flight_and_changes_no_verdict(tmp_path):
    with FakeJudgeServer(delay_seconds=0.05) as server:
        unlimited, _ = _judged_run(tmp_path / "free", server.openai_base_url, pool=False)
        server.peak_in_flight = 0
        pooled, records = _judged_run(tmp_path / "pooled", server.openai_base_url, pool=True)
        peak = server.peak_in_flight
    assert pooled == unlimited and len(pooled) > 0
    assert peak <= 2
    [record] = records
    assert (record["stage"], record["limit"], record["ceiling"]) == ("results", "pool judges", 2)
    assert record["max_in_flight"] <= 2
