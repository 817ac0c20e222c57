"""Issue 25 item 10: an unusable `DAGSTER_HOME` (not a folder, its database locked) stops `evalh run`
before the first cell with one line naming it.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from tests.support.evalh_process import run_evalh
from tests.reporting_agent import reporting_eval, reports

pytestmark = pytest.mark.e2e


def test_a_dagster_home_that_is_not_a_folder_stops_the_run_before_any_call(tmp_path: Path, env: dict[str, str]) -> None:
    path = reporting_eval(tmp_path / "home", "ok")
    not_a_folder = tmp_path / "dagster_home_file"
    not_a_folder.write_text("")
    done = run_evalh(["run", str(path)], {**env, "DAGSTER_HOME": str(not_a_folder)}, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "is not a directory" in errors[0] and str(not_a_folder) in errors[0], done.stderr
    assert reports(tmp_path / "home") == []  # the system was never called


def test_a_locked_instance_database_stops_the_run_before_any_call_naming_it(tmp_path: Path,
                                                                            env: dict[str, str]) -> None:
    import sqlite3

    path = reporting_eval(tmp_path / "locked", "ok")
    home = Path(env["DAGSTER_HOME"])
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("other__runs", ["x"])  # the storage exists
    holder = sqlite3.connect(home / "history" / "runs.db", isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # another process holds the database (a stuck `dagster dev`, say)
        done = run_evalh(["run", str(path)], env, tmp_path, timeout=300)
    finally:
        holder.close()
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "locked" in errors[0] and str(home) in errors[0], done.stderr
    assert "Traceback" not in done.stderr and "<memory at" not in done.stderr
    assert reports(tmp_path / "locked") == []  # the system was never called
