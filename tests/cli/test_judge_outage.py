"""Issue 39 item 7: a judge outage is not a regression of the system.

A real judge server (the bundled one, on loopback) judges a promoted baseline run; in the
next run it is stopped while the system is still answering. The results it could not judge
are errored, not failed: `drift` finds no regression and says how many cases it left out,
the gates say the results could not be judged (not "regression"), and `retry-failed
--include-evaluator-failures` finishes them from the saved traces with no system call.
Every command runs on a real pseudo-terminal, as a person runs it.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tests.support.fake_judge_server import FakeJudgeServer
from tests.support.evals import write_function_eval
from tests.support.evalh_process import EVALH
from tests.support.pty_terminal import run_on_terminal

pytestmark = pytest.mark.integration

CASES = 4
# The system blocks on this case until the test has stopped the judge (files, not sleeps).
STOP_AT = "case_2"

AGENT = f'''
import os, time
from pathlib import Path

HERE = Path(__file__).parent


def run(case, variant):
    with open(HERE / "calls.log", "a") as log:
        log.write(case["id"] + "\\n")
    if case["id"] == "{STOP_AT}" and os.environ.get("STOP_JUDGE_MID_RUN"):
        (HERE / "reached").write_text("")
        deadline = time.monotonic() + 120
        while not (HERE / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    return {{"final_answer": "The capital of France is Paris."}}
'''

EVAL = """
eval: {name: outage}
dataset: {type: jsonl, path: cases.jsonl}
systems:
  - {name: v1, adapter: python_function, target: agent:run}
evaluators:
  - name: names_paris
    type: llm_judge
    config:
      backend: openai_compatible
      model: judge-1
      base_url: ${JUDGE_URL}/v1
      timeout_seconds: 5
      nl_assertions: ['The answer mentions "Paris"']
run: {max_concurrency: 1}
gates: {no_regressions_vs_promoted_baseline: true}
"""


def _evalh(args, env, cwd) -> tuple[int, str]:
    session = run_on_terminal([*EVALH, *map(str, args)], env=env, cwd=cwd, columns=400)
    assert session.cursor_left_visible
    return session.returncode, session.text


def _calls(folder: Path) -> int:
    return len((folder / "calls.log").read_text().splitlines())


def _results(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def outage(tmp_path_factory):
    """A promoted baseline judged in full, then a run whose judge is stopped mid-run."""
    root = tmp_path_factory.mktemp("outage")
    home, folder = write_function_eval(root, "outage", agent=AGENT, eval_yaml=EVAL, cases=CASES)
    judge = FakeJudgeServer().start()
    port = judge.port
    env = {**os.environ, "DAGSTER_HOME": str(home), "JUDGE_URL": judge.url}
    try:
        code, first = _evalh(["run", "eval.yaml"], env, folder)
        assert code == 0, first
        baseline = _only_run(folder)
        code, promoted = _evalh(["promote", baseline], env, folder)
        assert code == 0, promoted

        def stop_the_judge_when_the_system_is_mid_run() -> None:
            reached = folder / "reached"
            while not reached.exists():  # ends with the run at the latest (the fixture's asserts)
                if stopper_done.wait(0.02):
                    return
            judge.stop()
            (folder / "go").write_text("")

        stopper_done = threading.Event()
        stopper = threading.Thread(target=stop_the_judge_when_the_system_is_mid_run, daemon=True)
        stopper.start()
        code, second = _evalh(["run", "eval.yaml", "--fail-on-gate"], {**env, "STOP_JUDGE_MID_RUN": "1"}, folder)
        stopper_done.set()
        stopper.join()
        assert (folder / "go").exists(), second
        run = next(p for p in _runs(folder) if p != baseline)
        yield {"env": env, "folder": folder, "baseline": baseline, "run": run, "code": code, "text": second,
               "port": port}
    finally:
        judge.stop()


def _runs(folder: Path) -> list[Path]:
    return sorted(p for p in (folder / "runs").iterdir() if p.is_dir() and not p.name.startswith((".", "baselines")))


def _only_run(folder: Path) -> Path:
    (run,) = _runs(folder)
    return run


def test_results_the_stopped_judge_could_not_give_are_errored_not_failed(outage):
    results = _results(outage["run"])
    not_judged = [r for r in results if r["error"] is not None]
    assert {r["case_id"] for r in not_judged} >= {STOP_AT, "case_3"}
    assert all(r["error"]["type"] == "judge_unreachable" for r in not_judged)
    assert all(r["passed"] for r in results if r["error"] is None)  # what was judged passed


def test_the_run_says_the_results_could_not_be_judged_and_the_gate_does_not_say_regression(outage):
    code, text = outage["code"], outage["text"]
    n = sum(1 for r in _results(outage["run"]) if r["error"] is not None)
    assert code == 1, text  # --fail-on-gate: an outage shows nothing, so the gate cannot pass
    assert f"+ {n} not judged" in text  # the table's errored column
    message = f"{n} result(s) could not be judged (the judge was unreachable: judge call to "
    gate_lines = [line for line in text.splitlines() if line.startswith("gate failed: ")]
    assert gate_lines and all(message in line for line in gate_lines), text
    assert not any("regression(s) against" in line for line in gate_lines), text
    assert "drift vs promoted baseline" in text and "0 regression(s)" in text
    assert (f"Finish them with: evalh retry-failed runs/{outage['run'].name} --include-evaluator-failures "
            "(re-judges the saved traces, no system call)") in text


def test_the_run_reports_say_it_first(outage):
    run = outage["run"]
    n = sum(1 for r in _results(run) if r["error"] is not None)
    report = (run / "report.md").read_text()
    assert f"**NOT JUDGED** — {n} result(s) could not be judged (the judge was unreachable: judge call to " in report
    drift = (run / "drift.md").read_text()
    assert "**0 regression(s)**" in drift and f"{n} case(s) could not be judged in the baseline or this run" in drift


def test_drift_finds_no_regression_and_says_how_many_cases_it_left_out(outage):
    n_cases = len({r["case_id"] for r in _results(outage["run"]) if r["error"] is not None})
    code, text = _evalh(["drift", outage["run"]], outage["env"], outage["folder"])
    assert code == 0, text
    assert "0 regression(s), 0 improvement(s)" in text
    assert f"v1: {n_cases} case(s) could not be judged in A or B" in text

    code, gated = _evalh(["drift", outage["run"], "--exit-nonzero-on-regression"], outage["env"], outage["folder"])
    assert code == 1
    assert f"{n_cases} case(s) could not be judged, so the gate cannot pass" in gated


def test_retry_failed_judges_them_again_with_no_system_call(outage):
    folder, run = outage["folder"], outage["run"]
    calls_before = _calls(folder)
    not_judged = sum(1 for r in _results(run) if r["error"] is not None)
    with FakeJudgeServer(port=outage["port"]) as judge:
        code, text = _evalh(["retry-failed", run, "--include-evaluator-failures"], outage["env"], folder)
        judge_calls = judge.calls
    assert code == 0, text
    n = sum(1 for r in _results(run) if r["error"] is not None)
    assert n == 0 and judge_calls > 0, text
    assert _calls(folder) == calls_before, "re-judging called the system"
    assert "retrying 0 failed cells" in text
    assert f"judging {not_judged} results again that could not be judged (no system call)" in text
    assert "result(s) could not be judged (" not in text and "gate failed" not in text
    assert all(r["passed"] for r in _results(run))

    code, drift = _evalh(["drift", run, "--exit-nonzero-on-regression"], outage["env"], folder)
    assert code == 0, drift
    assert "could not be judged" not in drift and "0 regression(s)" in drift
