"""Issue 25, item 11: ``copy_from:`` a symlink to ``/`` passed ``--dry-run``, then the run
ended with ``OSError: [Errno 22] Invalid argument`` and no path.

A fixture folder must stay inside the folder it is named from: a link out of it is
refused at load, naming the key and the path, for both workspace kinds.
"""

from __future__ import annotations

import json

import pytest

from tests.adversarial.leaks import error_text
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("workspace", ["{type: tempdir_snapshot, copy_from: ./fixture}",
                                       "{type: git, source_repo: ./fixture, init_if_missing: true}"],
                         ids=["copy_from", "source_repo"])
@pytest.mark.parametrize("args", [["run", "--dry-run", "eval.yaml"], ["run", "eval.yaml"]], ids=["dry-run", "run"])
def test_a_fixture_that_links_to_the_root_is_refused_at_load(tmp_path, env, args, workspace):
    (tmp_path / "fixture").symlink_to("/")
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (tmp_path / "eval.yaml").write_text(
        "eval: {name: rooted}\ndataset: {type: jsonl, path: cases.jsonl}\n"
        "systems:\n  - {name: a, adapter: python_function, target: agent:run}\n"
        f"workspace: {workspace}\n")

    proc = run_evalh(args, env, tmp_path)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    key = "copy_from" if "copy_from" in workspace else "source_repo"
    what = "fixture folder" if key == "copy_from" else "source folder"
    assert error_text(proc.stderr) == (
        f"eval.yaml:5 workspace.{key}: ./fixture is a link to /, outside the folder it is named from "
        f"({tmp_path.resolve()}): the {what} must be a folder inside it")
    assert not (tmp_path / "runs").exists()


def test_a_fixture_linked_inside_the_eval_folder_still_runs(tmp_path, env):
    (tmp_path / "data" / "seed").mkdir(parents=True)
    (tmp_path / "data" / "seed" / "a.txt").write_text("a\n")
    (tmp_path / "fixture").symlink_to("data/seed")
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (tmp_path / "eval.yaml").write_text(
        "eval: {name: linked}\ndataset: {type: jsonl, path: cases.jsonl}\n"
        "systems:\n  - {name: a, adapter: python_function, target: agent:run}\n"
        "workspace: {type: tempdir_snapshot, copy_from: ./fixture}\n")

    proc = run_evalh(["run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    (after,) = (tmp_path / "runs").glob("*/artifacts/c1/a/after")
    assert (after / "a.txt").read_text() == "a\n"
