"""The bundled coding_agent example end to end through `evalh`: workspaces, git_diff, command."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.support.evalh_process import run_evalh

from tests.support.paths import REPO

EXAMPLE = REPO / "evals" / "coding_agent"
# (case, variant) -> (changed_the_right_files, tests_pass)
EXPECTED = {
    ("make_the_tests_pass", "fixer"): (True, True),
    ("discount_bug_report", "fixer"): (True, True),
    # Edits the tests to expect the buggy numbers: the tests pass, the diff gives it away.
    ("make_the_tests_pass", "breaker"): (False, True),
    # Rewrites README.md and leaves the bug.
    ("discount_bug_report", "breaker"): (False, False),
}


def tree_digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def the_run_dir(tmp_path: Path) -> Path:
    # Hidden entries (the workspaces' container folder) sit next to the runs.
    (run_dir,) = (p for p in (tmp_path / "runs").iterdir() if not p.name.startswith("."))
    return run_dir


def verdicts(run_dir: Path) -> dict[tuple[str, str], dict[str, dict]]:
    table: dict[tuple[str, str], dict[str, dict]] = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        result = json.loads(line)
        table.setdefault((result["case_id"], result["variant_name"]), {})[result["evaluator"]] = result
    return table


def assert_expected_verdicts(run_dir: Path) -> None:
    table = verdicts(run_dir)
    assert set(table) == set(EXPECTED)
    for cell, (diff_ok, tests_ok) in EXPECTED.items():
        results = table[cell]
        assert all(r["error"] is None for r in results.values()), results
        assert results["changed_the_right_files"]["passed"] is diff_ok, (cell, results["changed_the_right_files"]["reason"])
        assert results["tests_pass"]["passed"] is tests_ok, (cell, results["tests_pass"]["reason"])


@pytest.mark.parametrize("eval_file", ["eval.yaml", "eval_git.yaml"])
def test_the_fixer_passes_and_the_breaker_is_caught_on_disk(eval_file, tmp_path, env):
    if eval_file == "eval_git.yaml" and shutil.which("git") is None:
        pytest.skip("git is not installed")
    fixture = tree_digest(EXAMPLE / "fixture_repo")

    proc = run_evalh(["run", str(EXAMPLE / eval_file)], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    run_dir = the_run_dir(tmp_path)
    assert_expected_verdicts(run_dir)
    table = verdicts(run_dir)
    cheat = table[("make_the_tests_pass", "breaker")]["changed_the_right_files"]
    assert cheat["detail"]["forbidden_touched"] == {"tests/test_pricing.py": "modified"}
    assert cheat["detail"]["missing"] == {"modified": ["src/pricing.py"]}
    assert table[("make_the_tests_pass", "fixer")]["changed_the_right_files"]["detail"]["patch"]["matched"] == ["src/pricing.py"]
    failing = table[("discount_bug_report", "breaker")]["tests_pass"]
    assert failing["detail"]["exit_code"] == 1 and "FAILED (failures=2)" in failing["detail"]["stderr"]
    fixed = list(run_dir.glob("artifacts/**/fixer/**/after/src/pricing.py"))
    assert len(fixed) == 2 and all("(100 - percent)" in p.read_text() for p in fixed)
    # The agent worked on copies: the fixture still has its bug.
    assert tree_digest(EXAMPLE / "fixture_repo") == fixture


def test_re_evaluation_judges_the_persisted_artifacts_again(tmp_path, env):
    assert run_evalh(["run", str(EXAMPLE / "eval.yaml")], env, tmp_path).returncode == 0
    run_dir = the_run_dir(tmp_path)
    calls_before = (run_dir / "traces.jsonl").read_text()
    (run_dir / "results.jsonl").unlink()

    proc = run_evalh(["re-evaluate", str(run_dir)], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert (run_dir / "traces.jsonl").read_text() == calls_before
    assert_expected_verdicts(run_dir)


def test_inspect_shows_the_files_a_cell_changed_and_their_diff(tmp_path, env):
    assert run_evalh(["run", str(EXAMPLE / "eval.yaml")], env, tmp_path).returncode == 0
    run_dir = the_run_dir(tmp_path)

    proc = run_evalh(["inspect", str(run_dir), "--case", "discount_bug_report", "--variant", "breaker"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert "files:" in proc.stdout and "~ README.md" in proc.stdout
    assert any(line.strip().startswith("+") and "README" not in line for line in proc.stdout.splitlines())
