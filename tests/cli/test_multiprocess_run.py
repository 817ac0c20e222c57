"""`evalh run` with run.executor {type: multiprocess}: every step in a process of its own, the
job rebuilt from the code location; the same verdicts as in process."""

from __future__ import annotations

import pytest
import yaml

from evalh_pipeline.cli.group import EXIT_CONFIG
from tests.conftest import run_evalh, write_eval

pytestmark = pytest.mark.integration


def test_a_multiprocess_run_executes_each_step_in_a_process_of_its_own(tmp_path, env, monkeypatch):
    import dagster as dg

    evals = tmp_path / "evals"
    path = write_eval(evals / "toy", cases=4)
    path.write_text(path.read_text().replace("  max_concurrency: 4\n",
                                             "  max_concurrency: 4\n  executor: {type: multiprocess}\n"))
    done = run_evalh(["run", str(path)], {**env, "EVALH_EVALS_DIR": str(evals)}, tmp_path)
    assert done.returncode == 0, done.stderr
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        [run] = instance.get_runs()
        starts = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START)
        pids = {record.step_key: record.dagster_event.pid for record in starts}
    stages = [f"toy__{s}" for s in ("cases", "traces", "results", "summary", "drift")]
    assert set(stages) <= set(pids) and len({pids[s] for s in stages}) == len(stages)

    alone = write_eval(tmp_path / "local" / "toy", cases=4)
    assert run_evalh(["run", str(alone)], env, tmp_path).returncode == 0
    [multi] = (evals / "toy" / "runs").iterdir()
    [single] = (tmp_path / "local" / "toy" / "runs").iterdir()
    rates = [{v["name"]: v["cases_passed"] for v in yaml.safe_load((r / "summary.yaml").read_text())["variants"]}
             for r in (multi, single)]
    assert rates[0] == rates[1]


def test_an_eval_the_code_location_does_not_serve_is_refused_in_one_line_before_anything(tmp_path, env):
    import dagster as dg

    path = write_eval(tmp_path / "toy", cases=2)
    path.write_text(path.read_text().replace("  max_concurrency: 4\n",
                                             "  max_concurrency: 4\n  executor: {type: multiprocess}\n"))
    done = run_evalh(["run", str(path)], {**env, "EVALH_EVALS_DIR": str(tmp_path / "elsewhere")}, tmp_path)
    assert done.returncode == EXIT_CONFIG, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "runs the steps in other processes, which load the eval from the code location" in line
    assert not (tmp_path / "calls.log").exists()
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        assert not instance.get_runs() and not instance.get_dynamic_partitions("toy__runs")
