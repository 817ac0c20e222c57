"""`evalh` as an eval-harness user drives it: exit codes, warnings, eval-harness run folders.

Real processes: ``evalh`` is run as a subprocess on files in eval-harness's format, and the
run folders read back are laid out exactly as eval-harness 2.0.2 writes them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from tests.compat.record_reference import EVALS, REFERENCE
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration


def test_an_unimportable_python_function_target_exits_non_zero_like_eval_harness(tmp_path, env):
    folder = tmp_path / "broken_target"
    shutil.copytree(EVALS / "broken_target", folder)
    proc = run_evalh(["run", "eval.yaml"], env, folder)
    assert json.loads((REFERENCE / "broken_target.json").read_text())["exit_code"] == 1  # what eval-harness did
    assert proc.returncode == 1, proc.stderr
    assert ("system 'missing module' could not start: cannot import module 'no_such_agent_module'"
            in " ".join(proc.stderr.split()))
    # The working variant still ran and was judged: a failing system never aborts the run.
    (run_dir,) = [p for p in (folder / "runs").iterdir() if p.name != "baselines"]
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert {(r["variant_name"], r["passed"]) for r in results} == {("works", True), ("missing module", False)}


def test_unknown_keys_warn_with_file_line_and_closest_key_and_strict_refuses(tmp_path, env):
    folder = tmp_path / "expected_text"
    shutil.copytree(EVALS / "expected_text", folder)
    text = (folder / "eval.yaml").read_text().replace("config: {any_of: [Carlton, Fitzroy]}",
                                                      "config: {any_off: [Carlton], any_of: [Fitzroy]}")
    (folder / "eval.yaml").write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "any_off" in row)
    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, folder)
    assert proc.returncode == 0, proc.stderr
    message = " ".join(proc.stderr.split())
    assert (f"warning: eval.yaml:{line} evaluators[1].config.any_off: unknown key for evaluator type "
            "'contains_text', ignored as eval-harness does (did you mean 'any_of'?)") in message
    strict = run_evalh(["run", "--strict", "--dry-run", "eval.yaml"], env, folder)
    assert strict.returncode == 1
    assert (f"eval.yaml:{line} evaluators[1].config.any_off: unknown key for evaluator type 'contains_text' "
            "(did you mean 'any_of'?) (an error with --strict)") in " ".join(strict.stderr.split())


def _eval_harness_run(runs: Path, run_id: str, passed: dict[str, bool]) -> Path:
    """A run folder in eval-harness 2.0.2's layout (its four files, no run.json)."""
    run_dir = runs / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({
        "eval": {"name": "listing"}, "systems": [{"name": "agent_main", "adapter": "http"}],
        "evaluators": [{"name": "mentions", "type": "contains_text", "config": {}}]}))
    (run_dir / "config_hash.txt").write_text("abc\n")
    traces, results = [], []
    for case, ok in passed.items():
        base = {"schema_version": "1.0", "run_id": run_id, "case_id": case, "variant_name": "agent_main"}
        traces.append({**base, "started_at": "2026-05-01T10:00:00Z", "finished_at": "2026-05-01T10:00:01Z",
                       "latency_ms": 1000, "input": {"q": case}, "output": {"final_answer": "Richmond" if ok else "?",
                                                                           "thinking": None, "structured": None},
                       "messages": [], "tool_calls": [], "tool_results": [],
                       "metrics": {"token_input": None, "cost_usd": None}, "error": None, "extra": {}})
        results.append({**base, "evaluator": "mentions", "evaluator_type": "contains_text", "passed": ok,
                        "score": None, "reason": "ok", "detail": {}, "started_at": "2026-05-01T10:00:01Z",
                        "finished_at": "2026-05-01T10:00:01Z", "latency_ms": 0, "error": None})
    (run_dir / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    (run_dir / "summary.yaml").write_text(yaml.safe_dump({
        "schema_version": "1.0", "run_id": run_id, "cases_total": len(passed),
        "variants": [{"name": "agent_main", "cases_total": len(passed), "cases_passed": sum(passed.values()),
                      "cases_errored": 0, "pass_rate": sum(passed.values()) / len(passed), "avg_latency_ms": 1000}]}))
    return run_dir


def test_compare_drift_and_inspect_read_eval_harness_run_folders(tmp_path, env):
    runs = tmp_path / "runs"
    before = _eval_harness_run(runs, "2026-05-01T10-00-00_listing", {"a": True, "b": True, "c": False})
    after = _eval_harness_run(runs, "2026-05-02T10-00-00_listing", {"a": True, "b": False, "c": True})
    compared = run_evalh(["compare", str(before), str(after), "--json"], env, tmp_path)
    assert compared.returncode == 0, compared.stderr
    (delta,) = json.loads(compared.stdout)["comparison"]["deltas"]
    assert (delta["regressions"], delta["improvements"]) == (["b"], ["c"])
    gate = run_evalh(["drift", str(after), "--baseline", str(before), "--exit-nonzero-on-regression"], env, tmp_path)
    assert gate.returncode == 1 and "regressions in agent_main (1): b" in gate.stdout
    inspected = run_evalh(["inspect", str(after)], env, tmp_path)
    assert inspected.returncode == 0, inspected.stderr
    assert "b · agent_main · FAIL" in inspected.stdout


def test_drift_reads_an_eval_harness_promoted_baseline_symlink(tmp_path, env):
    runs = tmp_path / "runs"
    before = _eval_harness_run(runs, "2026-05-01T10-00-00_listing", {"a": True, "b": True})
    after = _eval_harness_run(runs, "2026-05-02T10-00-00_listing", {"a": True, "b": False})
    (runs / "baselines").mkdir()
    os.symlink(os.path.relpath(before, runs / "baselines"), runs / "baselines" / "listing")  # `evalh promote` of eval-harness
    proc = run_evalh(["drift", str(after), "--exit-nonzero-on-regression"], env, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "(promoted baseline)" in proc.stdout and "regressions in agent_main (1): b" in proc.stdout
    refused = run_evalh(["promote", str(after)], env, tmp_path)
    assert refused.returncode == 1 and "promotes only its own runs" in " ".join(refused.stderr.split())


def test_promoting_replaces_an_eval_harness_baseline_link_and_keeps_it_in_history(tmp_path):
    from evalh_pipeline.store.baselines import current_baseline, promote
    from evalh_pipeline.store.run_dir import RunDirectory

    runs = tmp_path / "runs"
    before = _eval_harness_run(runs, "2026-05-01T10-00-00_listing", {"a": True})
    after = _eval_harness_run(runs, "2026-05-02T10-00-00_listing", {"a": True})
    (runs / "baselines").mkdir()
    os.symlink(os.path.relpath(before, runs / "baselines"), runs / "baselines" / "listing")
    assert current_baseline(runs, "listing").run_id == before.name
    promote(RunDirectory(after))
    assert not (runs / "baselines" / "listing").is_symlink()
    assert current_baseline(runs, "listing").run_id == after.name
    assert before.name in (runs / "baselines" / "listing" / "history.jsonl").read_text()
