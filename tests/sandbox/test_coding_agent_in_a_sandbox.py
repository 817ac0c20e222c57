"""evals/coding_agent_sandbox through `evalh run`: the agents and the tests run in containers."""

from __future__ import annotations

import pytest

from tests.sandbox.support import copy_sandbox_eval, leftover_sandboxes, records, run_in, traces_by_variant

pytestmark = pytest.mark.integration


def test_the_fixer_passes_its_tests_inside_the_sandbox_and_the_vandal_fails(docker_engine, tmp_path, env):
    done, run_dir = run_in(docker_engine, copy_sandbox_eval(tmp_path / "coding"), env)
    assert "fixer" in done.stdout, done.stderr
    verdicts = {(r["variant_name"], r["evaluator"]): r for r in records(run_dir, "results.jsonl")}
    tests_pass = verdicts[("fixer", "tests_pass")]
    assert tests_pass["passed"], tests_pass
    assert tests_pass["detail"]["sandbox"] == "local/busybox:1"  # ran in a container, not on the host
    assert tests_pass["detail"]["stdout"] == "all pricing tests pass\n"
    assert verdicts[("fixer", "changed_the_right_files")]["passed"]
    vandal = verdicts[("vandal", "tests_pass")]
    assert not vandal["passed"] and "FAIL: apply_discount 200 10 = 0" in vandal["detail"]["stdout"]
    assert not verdicts[("vandal", "changed_the_right_files")]["passed"]  # it touched README.md


def test_the_artifact_is_the_same_shape_as_tempdir_snapshot_and_the_engine_is_left_clean(docker_engine, tmp_path, env):
    done, run_dir = run_in(docker_engine, copy_sandbox_eval(tmp_path / "coding"), env)
    traces = traces_by_variant(run_dir)
    assert traces["fixer"]["error"] is None and traces["fixer"]["output"]["final_answer"] == "fixed"
    artifact = (run_dir / "artifacts" / "make_the_tests_pass" / "fixer" / "artifact.json").read_text()
    assert '"workspace_kind":"docker_volume"' in artifact.replace(" ", "")
    after = run_dir / "artifacts" / "make_the_tests_pass" / "fixer" / "after" / "src" / "pricing.sh"
    assert "price * (100 - percent) / 100" in after.read_text()
    before = run_dir / "artifacts" / "make_the_tests_pass" / "fixer" / "before" / "src" / "pricing.sh"
    assert "price - percent" in before.read_text()
    assert leftover_sandboxes(docker_engine) == []
