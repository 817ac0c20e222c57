"""`evalh re-evaluate RUN --repeat-judging K`: each trace judged K times by every judge, the
flip rates written to judge_consistency.jsonl and printed, results.jsonl left byte for byte.

The judge is a real OpenAI-compatible server on loopback (tests/support) whose answer for two
of the cases changes from one call to the next, as a sampling model's can; the judge caches
its answers (``cache: true``), so a repeat answered from the cache would never flip."""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from pathlib import Path

import pytest

from evalh_pipeline.stats.proportions import wilson_interval
from tests.support.evals import write_function_eval
from tests.support.evalh_process import EVALH, run_evalh
from tests.support.pty_terminal import run_on_terminal
from tests.support.scripted_chat_server import ScriptedChatServer

pytestmark = pytest.mark.integration

CASES = 4
FLIPPING = {"case_1", "case_3"}  # the judge alternates pass / fail on these
K = 3

AGENT = '''
import os


def run(case, variant):
    with open(os.environ["EVALH_TEST_CALL_LOG"], "a") as log:
        log.write(case["id"] + "\\n")
    return {"final_answer": "Paris, said for " + case["id"]}
'''

EVAL = """
eval: {name: consistency}
dataset: {type: jsonl, path: cases.jsonl}
systems:
  - {name: v1, adapter: python_function, target: agent:run}
evaluators:
  - name: names_paris
    type: llm_judge
    config:
      backend: openai_compatible
      model: judge-1
      base_url: ${JUDGE_URL}
      timeout_seconds: 10
      cache: true
      nl_assertions: ['The answer mentions "Paris"']
  - name: says_paris
    type: contains_text
    config: {text: Paris}
run: {max_concurrency: 2}
"""


class AlternatingJudge:
    """Answers a judge prompt: always "held", except for the FLIPPING cases, whose verdict
    alternates with each call for that case (held on the 1st, 3rd, ... call)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str | None:
        case = re.search(r"said for (case_\d+)", prompt)
        if case is None:
            return None
        with self._lock:
            self.calls[case.group(1)] += 1
            held = case.group(1) not in FLIPPING or self.calls[case.group(1)] % 2 == 1
        return json.dumps({"assertions": [{"index": 1, "passed": held, "reason": "checked"}]})


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A run judged once, then measured with --repeat-judging 3 on a terminal."""
    root = tmp_path_factory.mktemp("consistency")
    home, folder = write_function_eval(root, "eval", agent=AGENT, eval_yaml=EVAL, cases=CASES)
    script = AlternatingJudge()
    with ScriptedChatServer(script) as judge:
        env = {**os.environ, "DAGSTER_HOME": str(home), "JUDGE_URL": judge.base_url,
               "EVALH_TEST_CALL_LOG": str(root / "calls.log")}
        first = run_evalh(["run", "eval.yaml"], env, folder, timeout=600)
        assert first.returncode == 0, first.stderr
        (run,) = [p for p in (folder / "runs").iterdir() if (p / "run.json").exists()]
        results_before = (run / "results.jsonl").read_bytes()
        calls_before = (root / "calls.log").read_text()
        requests_before = len(judge.requests)
        session = run_on_terminal([*EVALH, "re-evaluate", str(run), "--repeat-judging", str(K)], env=env,
                                  cwd=folder, columns=200, timeout=600)
        yield {"run": run, "env": env, "folder": folder, "session": session, "results_before": results_before,
               "calls_before": calls_before, "calls_after": (root / "calls.log").read_text(),
               "judge_requests": len(judge.requests) - requests_before}


def _lines(run: Path) -> dict[str, dict]:
    return {line["evaluator"]: line for line in
            map(json.loads, (run / "judge_consistency.jsonl").read_text().splitlines())}


def test_repeat_judging_counts_the_cells_whose_verdicts_flip(measured):
    assert measured["session"].returncode == 0, measured["session"].text
    judged = _lines(measured["run"])["names_paris"]
    assert (judged["repeats"], judged["cells"], judged["flips"], judged["errored"]) == (K, CASES, 2, 0)
    low, high = wilson_interval(2, CASES)
    assert (judged["flip_rate"], judged["ci_low"], judged["ci_high"]) == (0.5, pytest.approx(low), pytest.approx(high))
    # Calls 2, 3 and 4 of a flipping case (the run made the 1st): fail, pass, fail.
    assert judged["flipping"] == [{"case_id": case, "variant_name": "v1", "sample": 0,
                                   "verdicts": {"fail": 2, "pass": 1}} for case in sorted(FLIPPING)]


def test_every_repeat_asks_the_judge_despite_its_cache_and_never_the_system(measured):
    assert measured["judge_requests"] == CASES * K
    assert measured["calls_after"] == measured["calls_before"]


def test_results_are_byte_identical_after_repeat_judging(measured):
    assert (measured["run"] / "results.jsonl").read_bytes() == measured["results_before"]


def test_a_deterministic_evaluator_is_skipped_with_a_note(measured):
    skipped = _lines(measured["run"])["says_paris"]
    assert skipped["skipped"].startswith("deterministic (calls no model)")
    assert (skipped["cells"], skipped["flips"], skipped["flipping"]) == (0, 0, [])
    assert "says_paris: skipped, deterministic (calls no model)" in measured["session"].text


def test_the_terminal_shows_one_flip_rate_line_per_judge(measured):
    low, high = wilson_interval(2, CASES)
    line = f"names_paris: flip rate 50.0% (95% CI {low * 100:.1f}–{high * 100:.1f}%) over {CASES} cells, K={K}"
    assert line in measured["session"].text.splitlines()


def test_repeat_judging_needs_at_least_two_repeats(measured):
    before = (measured["run"] / "judge_consistency.jsonl").read_bytes()
    refused = run_evalh(["re-evaluate", str(measured["run"]), "--repeat-judging", "1"], measured["env"],
                        measured["folder"])
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        "error: --repeat-judging 1: K must be 2 or more (a verdict per cell cannot disagree with itself)"]
    assert (measured["run"] / "judge_consistency.jsonl").read_bytes() == before


def test_repeat_judging_is_a_dagster_run_of_the_judge_consistency_job(measured):
    import dagster as dg

    with dg.DagsterInstance.from_config(measured["env"]["DAGSTER_HOME"]) as instance:
        runs = [r for r in instance.get_runs() if r.job_name.endswith("__judge_consistency")]
    assert len(runs) == 1 and runs[0].status == dg.DagsterRunStatus.SUCCESS
    assert runs[0].tags["evalh/repeat_judging"] == str(K)
    assert runs[0].tags["dagster/partition"] == measured["run"].name
