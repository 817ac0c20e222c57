"""Re-evaluation's fast paths: the plain loop of synchronous evaluators, direct result lines."""

from __future__ import annotations

import asyncio
import json
import math
import re
from datetime import datetime, timedelta, timezone

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.evaluators.base import Evaluator, SyncEvaluator, Verdict
from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.models import Trace, TraceError
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.result_lines import Judged, build_result, result_lines
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.jsonl import CorruptRecordError, iter_lines
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval

FIVE = """
  - name: mentions_paris
    type: contains_text
  - name: used_lookup
    type: tool_called
    config: {tool_name: lookup}
  - name: exact_answer
    type: exact_match
    config: {expected: "answer 3 Paris"}
  - name: says_answer
    type: regex_match
    config: {pattern: 'answer \\d+'}
  - name: fast
    type: latency_under
    config: {max_ms: 60000}
"""

_TIMES = re.compile(r'"started_at":"[^"]*","finished_at":"[^"]*","latency_ms":\d+')


def _prepared(tmp_path, cases=40, evaluators=FIVE):
    spec = load_eval(write_eval(tmp_path / "toy", cases=cases, evaluators=evaluators))
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    return spec, info.run_dir


def _untimed(run_dir):
    return [_TIMES.sub("", line) for line in run_dir.results.read_text().splitlines()]


def test_judging_every_trace_again_writes_the_same_results(tmp_path):
    spec, run_dir = _prepared(tmp_path)
    single = asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    one = _untimed(run_dir)
    double = asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    assert _untimed(run_dir) == one  # same lines, same order
    assert len(one) == 40 * 2 * 5
    assert (double.traces, double.results, double.by_variant) == (single.traces, single.results, single.by_variant)
    assert not [p.name for p in run_dir.path.iterdir() if p.name.endswith(".tmp")]


class _AsyncYes(Evaluator):
    """Does (pretend) I/O, so its eval is judged in the async pool."""

    async def evaluate(self, case, trace, artifact):
        await asyncio.sleep(0)
        return Verdict(True, "yes", score=1.0)




def test_the_fast_path_writes_what_the_async_path_writes(tmp_path):
    spec, run_dir = _prepared(tmp_path)
    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    fast = _untimed(run_dir)
    mixed = load_eval(write_eval(tmp_path / "mixed", cases=40, evaluators=FIVE + "  - name: yes\n    type: async_yes\n"))
    asyncio.run(evaluate_traces(mixed, run_dir, incremental=False))
    # The same lines; the fast path lays them out evaluator by evaluator, the async one trace by trace.
    assert sorted(line for line in _untimed(run_dir) if '"evaluator":"yes"' not in line) == sorted(fast)


def test_a_corrupt_trace_is_reported_with_its_line(tmp_path):
    spec, run_dir = _prepared(tmp_path)
    lines = run_dir.traces.read_text().splitlines(keepends=True)
    lines[-3] = "{not json\n"
    run_dir.traces.write_text("".join(lines))
    with pytest.raises(CorruptRecordError, match=rf"traces.jsonl:{len(lines) - 2}: not JSON"):
        asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    assert not [p.name for p in run_dir.path.iterdir() if p.name.endswith(".tmp")]


class _Raising(SyncEvaluator):
    def evaluate_sync(self, case, trace, artifact):
        if case.id == "case_2":
            raise ValueError("bad case")
        return Verdict(True, "fine", score=1.0)




@pytest.fixture(autouse=True)
def _test_evaluators(registered):
    registered(EVALUATORS, "async_yes", _AsyncYes)
    registered(EVALUATORS, "raising_sync", _Raising)


def test_a_raising_sync_evaluator_fails_only_its_own_result(tmp_path):
    spec, run_dir = _prepared(tmp_path, evaluators=FIVE + "  - name: raises\n    type: raising_sync\n")
    stats = asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    results = [json.loads(line) for line in run_dir.results.read_text().splitlines()]
    broken = [r for r in results if r["error"]]
    assert stats.evaluator_errors == len(broken) == 2  # case_2 of both variants
    assert {(r["case_id"], r["evaluator"]) for r in broken} == {("case_2", "raises")}
    assert "ValueError: bad case" in broken[0]["reason"] and broken[0]["passed"] is False
    assert sum(r["case_id"] == "case_2" and r["passed"] for r in results) >= 2  # its other verdicts stand


def _trace():
    now = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    return Trace(run_id="r", case_id="c\u00e9", variant_name="v", started_at=now, finished_at=now, latency_ms=0)


@pytest.mark.parametrize("verdict, error", [
    (Verdict(True, "plain", score=1.0, detail={"a": [1, 2.5, None], "b": {"c": "\u00e9\n\""}}), None),
    (Verdict(False, "int score coerced by the model", score=1, detail={"t": (1, 2)}), None),
    (Verdict(True, "inf score", score=math.inf, detail={"x": math.nan}), None),
    (Verdict(False, "raised"), TraceError(type="exception", message="boom", stack="...")),
    (Verdict(1, "truthy passed", score=None), None),
    (Verdict(False, "zero and negative zero", score=-0.0, detail={"z": 0.0}), None),
    (Verdict(False, "zero", score=0.0), None),
    (Verdict(True, "fraction", score=0.123456789), None),
])
@pytest.mark.parametrize("tz", [timezone.utc, timezone(timedelta(hours=2)), None])
@pytest.mark.parametrize("micro", [0, 120])
def test_result_lines_are_byte_for_byte_the_models_json(verdict, error, tz, micro):
    class Named(SyncEvaluator):
        def evaluate_sync(self, case, trace, artifact):
            return verdict

    evaluator = Named("name \u00e9", "named", {})
    started = datetime(2026, 1, 2, 3, 4, 5, micro, tzinfo=tz)
    first = Judged(evaluator, verdict, error, started, started + timedelta(microseconds=1500))
    second = Judged(evaluator, verdict, error, first.finished, first.finished + timedelta(seconds=2))
    trace = _trace()
    expected = "".join(build_result(trace, j).model_dump_json() + "\n" for j in (first, second))
    assert result_lines(trace, [first, second]).decode() == expected


def test_a_legacy_results_file_is_replaced_from_the_store_and_its_torn_tail_set_aside(tmp_path):
    spec, run_dir = _prepared(tmp_path, cases=4)
    other = {"schema_version": "1.0", "run_id": "r", "case_id": "x", "variant_name": "gone", "sample": 0,
             "evaluator": "e", "evaluator_type": "t", "passed": True, "reason": "", "started_at": "2026-01-01T00:00:00Z",
             "finished_at": "2026-01-01T00:00:00Z", "latency_ms": 0}
    torn = '{"schema_version":"1.0","run_id":"r","case_id":"torn"'
    run_dir.results.write_text("\n".join([json.dumps(other), "", torn]))
    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    records = [json.loads(line) for _, line in iter_lines(run_dir.results)]
    # An evaluator no longer configured loses its results; every configured one judged every trace.
    assert len(records) == 4 * 2 * 5 and not any(r["case_id"] in ("x", "torn") for r in records)
    assert (run_dir.path / "results.jsonl.torn").read_text() == torn + "\n"
