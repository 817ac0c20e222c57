"""Issue 32: an artifact.json of another schema major is refused on read, as a trace is.

A run's ``artifact.json`` written by a 2.x release loaded silently into 1.x evaluators.
``re-evaluate`` and ``inspect`` now check its ``schema_version`` the way traces.jsonl is
checked (models/versioning.py's ``migrate``) and say which file, in one line.
"""

from __future__ import annotations

import json

import pytest

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

AGENT = """\
from pathlib import Path

def run(case, variant):
    (Path(variant["_workspace_path"]) / "b.txt").write_text("new\\n")
    return {"final_answer": "done"}
"""


def _run(tmp_path, env):
    (tmp_path / "fixture").mkdir()
    (tmp_path / "fixture" / "a.txt").write_text("a\n")
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (tmp_path / "eval.yaml").write_text(
        "eval: {name: arts}\ndataset: {type: jsonl, path: cases.jsonl}\n"
        "systems:\n  - {name: a, adapter: python_function, target: agent:run}\n"
        "workspace:\n  type: tempdir_snapshot\n  copy_from: ./fixture\n"
        "evaluators:\n  - {name: added, type: git_diff, config: {expected_added: [b.txt]}}\n")
    proc = run_evalh(["run", "eval.yaml"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.name.endswith("_arts")]
    return run_dir, run_dir / "artifacts" / "c1" / "a" / "artifact.json"


def _set_version(artifact, version: str) -> None:
    document = json.loads(artifact.read_text())
    assert document["schema_version"] == "1.0"
    artifact.write_text(json.dumps({**document, "schema_version": version}))


def test_a_2x_artifact_is_refused_by_re_evaluate_and_inspect_naming_the_file(tmp_path, env):
    run_dir, artifact = _run(tmp_path, env)
    results = (run_dir / "results.jsonl").read_bytes()
    _set_version(artifact, "2.0")

    proc = run_evalh(["re-evaluate", "--all", str(run_dir)], env, tmp_path)

    assert proc.returncode == 2, proc.stderr
    refused = (f"{artifact} has schema_version '2.0'; this evalh_pipeline reads 1.x only. Upgrade evalh_pipeline, "
               "or migrate the file with the release that wrote it.")
    [line] = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: arts__judge failed: {refused}"), line
    assert (run_dir / "results.jsonl").read_bytes() == results  # nothing judged from it

    proc = run_evalh(["inspect", str(run_dir)], env, tmp_path)

    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == f"error: SchemaVersionError: {refused}"


def test_a_later_1x_artifact_still_loads(tmp_path, env):
    run_dir, artifact = _run(tmp_path, env)
    _set_version(artifact, "1.7")

    proc = run_evalh(["re-evaluate", "--all", str(run_dir)], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    [result] = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert result["passed"] is True, result
