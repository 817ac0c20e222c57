"""`evalh delete-run`: the run folder and its partition go together; the promoted baseline is refused."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from tests.conftest import run_evalh, write_eval

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
