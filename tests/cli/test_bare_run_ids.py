"""`evalh re-evaluate <run_id>` and the read commands take a bare run id (DataModel.md's example)."""

from __future__ import annotations

import json

import pytest

from tests.support.evalh_process import run_evalh

from tests.support.evals import write_eval

pytestmark = pytest.mark.integration


def test_a_bare_run_id_is_found_in_the_runs_folder_of_the_working_directory(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=2)
    assert run_evalh(["run", str(path)], env, tmp_path).returncode == 0
    (run_dir,) = (tmp_path / "toy" / "runs").iterdir()
    before = (run_dir / "results.jsonl").read_text()

    rejudged = run_evalh(["re-evaluate", run_dir.name], env, tmp_path / "toy")  # ./runs/<run_id>
    assert rejudged.returncode == 0, rejudged.stderr
    assert f"run directory: {run_dir}" in rejudged.stdout.replace("\n", "")
    with_config = run_evalh(["re-evaluate", run_dir.name, "--config", str(path)], env, tmp_path)
    assert with_config.returncode == 0, with_config.stderr
    assert len((run_dir / "results.jsonl").read_text().splitlines()) == len(before.splitlines())

    shown = run_evalh(["compare", run_dir.name, run_dir.name, "--json"], env, tmp_path / "toy")
    assert shown.returncode == 0 and json.loads(shown.stdout)["comparison"]["regressions_count"] == 0
    missing = run_evalh(["re-evaluate", "2026-01-01T00-00-00-000000_nope"], env, tmp_path / "toy")
    assert missing.returncode != 0 and "not a run directory" in missing.stderr


def test_evalh_runs_dir_holds_the_default_output_and_the_runs_named_by_a_bare_id(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=2)
    path.write_text(path.read_text().replace(f"path: {tmp_path / 'toy' / 'runs'}", "path: runs"))
    runs = tmp_path / "elsewhere"
    env = {**env, "EVALH_RUNS_DIR": str(runs)}

    ran = run_evalh(["run", str(path)], env, tmp_path)
    assert ran.returncode == 0, ran.stderr
    (run_dir,) = [p for p in runs.iterdir() if (p / "run.json").exists()]
    assert not (tmp_path / "runs").exists() and not (tmp_path / "toy" / "runs").exists()

    shown = run_evalh(["inspect", run_dir.name, "--limit", "1"], env, tmp_path)  # no ./runs here
    assert shown.returncode == 0, shown.stderr
    assert f"in {run_dir.name}" in shown.stdout.replace("\n", "")
