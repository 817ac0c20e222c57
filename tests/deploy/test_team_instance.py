"""deploy/dagster.yaml, the team's instance, as the docs show it: PostgreSQL storage through
psycopg2 and the queued run coordinator, used by `evalh run` against a real PostgreSQL."""

from __future__ import annotations


import pytest

from tests.support.deployment import team_home
from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval

pytestmark = pytest.mark.integration


def test_evalh_runs_an_eval_on_the_team_instance_in_postgresql(tmp_path, env, team_postgres, monkeypatch):
    import dagster as dg
    from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage

    home = team_home(tmp_path)
    path = write_eval(tmp_path / "toy", cases=3)
    done = run_evalh(["run", str(path)], env={**env, **team_postgres, "DAGSTER_HOME": str(home)}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name, value in {**team_postgres, "DAGSTER_HOME": str(home)}.items():
        monkeypatch.setenv(name, value)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        [run] = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.SUCCESS
        partitions = instance.get_dynamic_partitions("toy__runs")
        assert len(partitions) == 1 and (tmp_path / "toy" / "runs" / partitions[0] / "summary.yaml").is_file()
        # Every stage's materialization is in PostgreSQL, where workers on other machines write theirs.
        stages = {key.path[-1] for key in instance.get_asset_keys() if key.path[0] == "toy"}
        assert {"cases", "traces", "results", "summary", "drift"} <= stages


def test_a_plain_postgresql_scheme_is_refused_before_the_instance_is_used(tmp_path, env, team_postgres):
    home = team_home(tmp_path)
    text = (home / "dagster.yaml").read_text().replace("scheme: postgresql+psycopg2", "scheme: postgresql")
    (home / "dagster.yaml").write_text(text)
    path = write_eval(tmp_path / "toy", cases=2)
    done = run_evalh(["run", str(path)], env={**env, **team_postgres, "DAGSTER_HOME": str(home)}, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "storage: postgres_db.scheme postgresql (the default) selects psycopg 3" in line
    assert "postgresql+psycopg2" in line
    assert not (tmp_path / "calls.log").exists()
