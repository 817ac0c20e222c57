"""Issue 32: ``contains_text`` on another field than the answer still checks the case's
answer lists (``expected.answer_should_include`` / ``_not_include``) there, as eval-harness
2.0.2 does (tests/compat/evals/expected_text keeps that verdict); it is said at load."""

from __future__ import annotations

import json

import pytest

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration


def _eval(tmp_path, config: str) -> None:
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x', 'thinking': 't'}\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (tmp_path / "eval.yaml").write_text(
        "eval: {name: thought}\ndataset: {type: jsonl, path: cases.jsonl}\n"
        "systems:\n  - {name: a, adapter: python_function, target: agent:run}\n"
        f"evaluators:\n  - name: no secret\n    type: contains_text\n    config: {config}\n")


def _warnings(stderr: str) -> list[str]:
    return [line.removeprefix("warning: ") for line in stderr.splitlines() if line.startswith("warning: ")]


def test_the_thinking_field_without_lists_is_warned_naming_both_case_lists(tmp_path, env):
    _eval(tmp_path, "{field: output.thinking}")

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert _warnings(proc.stderr) == [
        "eval.yaml:8 evaluators[0].config.field: the case's expected.answer_should_include and "
        "expected.answer_should_not_include are checked in output.thinking, since all_of and none_of are not set "
        "(set all_of and none_of, [] for none)"]


def test_only_the_list_that_falls_back_is_named(tmp_path, env):
    _eval(tmp_path, "{field: output.thinking, none_of: [secret]}")

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert _warnings(proc.stderr) == [
        "eval.yaml:8 evaluators[0].config.field: the case's expected.answer_should_include is checked in "
        "output.thinking, since all_of is not set (set all_of, [] for none)"]


@pytest.mark.parametrize("config", ["{field: output.thinking, all_of: [], none_of: [secret]}", "{none_of: [secret]}"],
                         ids=["explicit-lists", "final-answer"])
def test_explicit_lists_or_the_answer_field_load_quietly(tmp_path, env, config):
    _eval(tmp_path, config)

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert _warnings(proc.stderr) == []
