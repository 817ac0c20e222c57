"""Issue 32: a key given twice in an eval-harness YAML file loads as eval-harness loads it.

eval-harness reads eval.yaml and cases.yaml with PyYAML, where the later of two equal keys
wins; evalh refused such files. They now load the same way, with a warning naming both
lines, and ``--strict`` makes it an error.
"""

from __future__ import annotations

import json

import pytest

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

EVAL = """\
eval: {name: twice}
dataset: {type: yaml, path: cases.yaml}
systems:
  - {name: a, adapter: python_function, target: agent:run}
evaluators:
  - name: says
    type: contains_text
    config:
      all_of: [nothing like it]
      all_of: [Richmond]
"""

CASES = """\
cases:
  - id: c1
    input: {say: Carlton}
    input: {say: Richmond}
"""


def _write(tmp_path) -> None:
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': case['input']['say']}\n")
    (tmp_path / "eval.yaml").write_text(EVAL)
    (tmp_path / "cases.yaml").write_text(CASES)


WARNINGS = [
    "warning: cases.yaml:4 cases[0].input: duplicate key: the value at cases.yaml:4 overrides the one at "
    "cases.yaml:3, as eval-harness reads it (remove one of them)",
    "warning: eval.yaml:10 evaluators[0].config.all_of: duplicate key: the value at eval.yaml:10 overrides the one "
    "at eval.yaml:9, as eval-harness reads it (remove one of them)",
]


def test_the_later_value_is_used_with_a_warning_naming_both_lines(tmp_path, env):
    _write(tmp_path)

    proc = run_evalh(["run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("warning:")] == WARNINGS
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.name.endswith("_twice")]
    [trace] = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    [result] = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    # Both later values: the case says Richmond, and all_of asks for Richmond.
    assert trace["output"]["final_answer"] == "Richmond"
    assert result["passed"] is True and result["detail"]["all_of"] == ["Richmond"], result


def test_strict_refuses_each_duplicate_before_anything_is_written(tmp_path, env):
    _write(tmp_path)

    proc = run_evalh(["run", "--strict", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines()[-2:] == [
        w.removeprefix("warning: ") + " (an error with --strict)" for w in WARNINGS]
    assert not (tmp_path / "runs").exists()
