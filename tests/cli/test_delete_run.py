"""`evalh delete-run` and `evalh prune`: run folders and their partitions go together; the promoted baseline is never deleted."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from tests.support.evalh_process import run_evalh

from tests.support.evals import write_eval

pytestmark = pytest.mark.e2e


def test_delete_run_removes_the_folder_and_its_partition_and_never_the_baseline(tmp_path: Path,
                                                                                 env: dict[str, str]) -> None:
    path = write_eval(tmp_path / "toy", cases=2)
    for _ in range(2):
        assert run_evalh(["run", str(path)], env, tmp_path, timeout=300).returncode == 0
    kept, doomed = sorted((tmp_path / "toy" / "runs").glob("2*"))
    assert run_evalh(["promote", str(kept)], env, tmp_path, timeout=300).returncode == 0

    refused = run_evalh(["delete-run", str(kept), "--yes"], env, tmp_path)
    assert refused.returncode == 1 and "is the promoted baseline of toy" in refused.stderr
    deleted = run_evalh(["delete-run", str(doomed), "--yes"], env, tmp_path)

    assert deleted.returncode == 0, deleted.stderr
    assert not doomed.exists() and kept.exists()
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        assert instance.get_dynamic_partitions("toy__runs") == [kept.name]


def test_prune_keeps_the_newest_runs_and_the_baseline_and_removes_the_rest_with_their_partitions(
        tmp_path: Path, env: dict[str, str]) -> None:
    path = write_eval(tmp_path / "toy", cases=1)
    for _ in range(4):
        assert run_evalh(["run", str(path)], env, tmp_path, timeout=300).returncode == 0
    baseline, older, old, newest = sorted((tmp_path / "toy" / "runs").glob("2*"))
    assert run_evalh(["promote", str(baseline)], env, tmp_path, timeout=300).returncode == 0

    pruned = run_evalh(["prune", str(path), "--keep", "1", "--yes"], env, tmp_path)

    assert pruned.returncode == 0, pruned.stderr
    assert f"pruned 2 run(s) of toy; kept 1 and the baseline {baseline.name}" in pruned.stdout
    assert baseline.exists() and newest.exists() and not older.exists() and not old.exists()
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        assert sorted(instance.get_dynamic_partitions("toy__runs")) == [baseline.name, newest.name]
    again = run_evalh(["prune", str(path), "--keep", "1", "--yes"], env, tmp_path)
    assert again.returncode == 0 and "nothing to prune: 1 run(s) of toy, keeping 1" in again.stdout


def _bare_list_dataset(folder: Path) -> Path:
    """An eval whose YAML dataset is a bare list (no ``cases:`` key): a dataset-shape error."""
    path = write_eval(folder, cases=1)
    (folder / "cases.yaml").write_text("- id: case_0\n  input: {answer: Paris}\n")
    path.write_text(path.read_text().replace("type: jsonl\n  path: cases.jsonl", "type: yaml\n  path: cases.yaml"))
    return path


def test_a_dataset_error_is_refused_before_the_dagster_instance_sees_the_run(tmp_path: Path,
                                                                            env: dict[str, str]) -> None:
    path = _bare_list_dataset(tmp_path / "toy")

    refused = run_evalh(["run", str(path)], env, tmp_path, timeout=300)

    assert refused.returncode == 1, refused.stderr
    assert "cases.yaml" in refused.stderr and "a YAML dataset needs a 'cases:' list" in refused.stderr
    assert not (tmp_path / "toy" / "runs").exists() or not any((tmp_path / "toy" / "runs").iterdir())
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        assert instance.get_dynamic_partitions("toy__runs") == []
        assert instance.get_runs() == []


def test_delete_run_with_the_eval_removes_a_partition_whose_run_folder_never_came_to_exist(
        tmp_path: Path, env: dict[str, str]) -> None:
    write_eval(tmp_path / "toy", cases=1)
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        instance.add_dynamic_partitions("toy__runs", ["orphan-1"])

    plain = run_evalh(["delete-run", "orphan-1", "--yes"], env, tmp_path)
    assert plain.returncode != 0
    assert "evalh delete-run orphan-1 --eval EVAL_NAME" in plain.stderr
    wrong = run_evalh(["delete-run", "orphan-1", "--eval", "other", "--yes"], env, tmp_path)
    assert wrong.returncode == 1 and "eval 'other' has no partition orphan-1" in wrong.stderr
    removed = run_evalh(["delete-run", "orphan-1", "--eval", "toy", "--yes"], env, tmp_path)

    assert removed.returncode == 0, removed.stderr
    assert "removed partition orphan-1 of toy" in removed.stdout
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        assert instance.get_dynamic_partitions("toy__runs") == []
