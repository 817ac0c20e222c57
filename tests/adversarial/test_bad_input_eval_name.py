"""Issue 11, item 18: an eval name too long for the run folders it names.

A 240-character name passed ``--dry-run``, then the run failed with ``File name too
long``. The name is checked when the eval loads; the longest allowed name runs.
"""

from __future__ import annotations

import json

import pytest

from tests.adversarial.leaks import error_text
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

MAX_EVAL_NAME = 128  # config/schema.py


def write(folder, name: str) -> None:
    (folder / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (folder / "eval.yaml").write_text(
        f"eval:\n  name: {name}\ndataset: {{type: jsonl, path: cases.jsonl}}\n"
        "systems:\n  - {name: a, adapter: python_function, target: agent:run}\n")


@pytest.mark.parametrize("args", [["run", "--dry-run", "eval.yaml"], ["run", "eval.yaml"]], ids=["dry-run", "run"])
def test_a_240_character_eval_name_is_refused_at_load(tmp_path, env, args):
    write(tmp_path, "e" * 240)
    proc = run_evalh(args, env, tmp_path)
    assert proc.returncode == 1, proc.stderr
    message = error_text(proc.stderr)
    assert message == f"eval.yaml:2 eval.name: eval name is 240 characters; at most {MAX_EVAL_NAME} (it names the run folders)"
    assert not (tmp_path / "runs").exists()


def test_the_longest_allowed_name_runs_end_to_end(tmp_path, env):
    write(tmp_path, "n" * MAX_EVAL_NAME)
    proc = run_evalh(["run", "eval.yaml"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name.endswith("_" + "n" * MAX_EVAL_NAME) and (run_dir / "summary.yaml").is_file()
