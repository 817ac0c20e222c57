"""Per-cell content hashes through the real CLI: `evalh run --reuse` calls the system only for
changed cells, `evalh re-evaluate` re-judges only the evaluator whose config changed."""

from __future__ import annotations

import json

import pytest

from evalh_pipeline.store.run_dir import RunDirectory
from tests.support.evalh_process import run_evalh
from tests.support.evals import STEADY_SYSTEMS, write_eval
from tests.support.paths import REPO

CASES = 10_000


def _run_dirs(folder):
    return sorted(p for p in (folder / "runs").iterdir() if (p / "run.json").exists())


def _calls(env):
    with open(env["EVALH_TEST_CALL_LOG"]) as f:
        return sorted(tuple(json.loads(line)) for line in f)


@pytest.mark.e2e
def test_ten_thousand_cases_one_changed_reuse_and_one_evaluator_changed(tmp_path, env):
    folder = tmp_path / "big"
    eval_yaml = write_eval(folder, cases=CASES, systems=STEADY_SYSTEMS)
    first = run_evalh(["run", str(eval_yaml)], env, REPO, timeout=600)
    assert first.returncode == 0, first.stderr
    (run1,) = _run_dirs(folder)
    assert len(_calls(env)) == 2 * CASES

    # One case changes its input.
    lines = (folder / "cases.jsonl").read_text().splitlines()
    case = json.loads(lines[1234])
    case["input"]["answer"] = "changed answer Paris"
    lines[1234] = json.dumps(case)
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")
    open(env["EVALH_TEST_CALL_LOG"], "w").close()

    second = run_evalh(["run", str(eval_yaml), "--reuse", str(run1)], env, REPO, timeout=600)
    assert second.returncode == 0, second.stderr
    assert _calls(env) == [("case_1234", "base"), ("case_1234", "candidate")]  # once per variant
    assert f"reused {2 * CASES - 2} of {2 * CASES} cell(s) from {run1.name}; 2 called the system" in second.stdout
    run2 = next(p for p in _run_dirs(folder) if p != run1)
    reuse = json.loads((run2 / "reuse.json").read_text())
    assert (reuse["from_run_id"], reuse["reused"], reuse["changed"]) == (run1.name, 2 * CASES - 2, 2)
    summary = (run2 / "summary.yaml").read_text()
    assert f"reused_traces: {2 * CASES - 2}" in summary and run1.name in summary
    traces = [json.loads(line) for line in (run2 / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 2 * CASES and {t["run_id"] for t in traces} == {run2.name}
    assert sum(t["reused_from"] == run1.name for t in traces) == 2 * CASES - 2

    # One of the two evaluators changes its config: only its results are judged again.
    before = RunDirectory(run2).results.read_bytes().splitlines()
    eval_yaml.write_text(eval_yaml.read_text().replace("type: contains_text",
                                                       "type: contains_text\n    config: {case_sensitive: true}"))
    third = run_evalh(["re-evaluate", str(run2)], env, REPO, timeout=600)
    assert third.returncode == 0, third.stderr
    assert (f"re-judged {2 * CASES} result(s) (changed evaluators: mentions_paris; 0 new trace(s)); "
            f"kept {2 * CASES} unchanged") in third.stdout
    after = RunDirectory(run2).results.read_bytes().splitlines()
    untouched = [line for line in before if b'"evaluator":"used_lookup"' in line]
    assert [line for line in after if b'"evaluator":"used_lookup"' in line] == untouched
    assert len(after) == len(before)
    assert not set(line for line in after if b'"evaluator":"mentions_paris"' in line) & set(before)
