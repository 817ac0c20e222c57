"""Issue 24's user path through `evalh`: a run cut mid-write (a torn last trace line) is
re-evaluated, the system's answers change, the run is resumed; every verdict agrees with
its trace and the torn line is kept aside, not destroyed."""

from __future__ import annotations

import json

import pytest

from evalh_pipeline.store.records import TRACES
from tests.support.evalh_process import run_evalh
from tests.support.evals import STEADY_SYSTEMS, write_eval
from tests.support.paths import REPO

CASES = 12


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.e2e
def test_torn_tail_reevaluate_changed_answers_resume_every_verdict_agrees_with_its_trace(tmp_path, env):
    folder = tmp_path / "toy"
    eval_yaml = write_eval(folder, cases=CASES, systems=STEADY_SYSTEMS)
    first = run_evalh(["run", str(eval_yaml)], env, REPO, timeout=300)
    assert first.returncode == 0, first.stderr
    (run,) = (p for p in (folder / "runs").iterdir() if (p / "run.json").exists())
    traces = run / "traces.jsonl"

    # Cut mid-write: the last eight traces lost, and half of the next one left as a torn line.
    lines = traces.read_text().splitlines(keepends=True)
    kept, lost = lines[:-9], lines[-9:]
    torn = lost[0][: len(lost[0]) // 2]
    traces.write_text("".join(kept) + torn)

    looked = run_evalh(["re-evaluate", str(run)], env, REPO, timeout=300)
    assert looked.returncode == 0, looked.stderr
    assert len(_records(run / "results.jsonl")) == 2 * len(kept)  # two evaluators, complete traces only

    # The system now answers otherwise: the cells run again must be judged on their new traces.
    agent = folder / "stub_agent.py"
    agent.write_text(agent.read_text().replace('answer = case["input"]["answer"]', 'answer = "no idea"'))
    resumed = run_evalh(["run", str(eval_yaml), "--resume", str(run)], env, REPO, timeout=300)
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout

    on_disk = traces.read_text().splitlines(keepends=True)
    assert len(on_disk) == 2 * CASES and on_disk[: len(kept)] == kept
    assert (run / "traces.jsonl.torn").read_text() == torn + "\n"  # kept aside, not cut away
    by_cell = {(t["case_id"], t["variant_name"]): (TRACES.content_hash(line), t)
               for line, t in ((line, json.loads(line)) for line in on_disk)}
    results = _records(run / "results.jsonl")
    assert len(results) == 2 * 2 * CASES
    for r in results:
        trace_hash, trace = by_cell[(r["case_id"], r["variant_name"])]
        assert r["trace_hash"] == trace_hash  # judged on the trace on disk, never a discarded one
        if r["evaluator"] == "mentions_paris":
            assert r["passed"] == ("Paris" in trace["output"]["final_answer"])
    rerun = {(t["case_id"], t["variant_name"]) for t in map(json.loads, lost)}
    assert all(by_cell[cell][1]["output"]["final_answer"] == "no idea" for cell in rerun)

    again = run_evalh(["re-evaluate", str(run)], env, REPO, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "re-judged 0 result(s)" in again.stdout
