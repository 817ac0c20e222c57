"""`evalh run` with run.executor {type: multiprocess}: every step in a process of its own, the
job rebuilt in each from the eval file (defs/launch.py ``eval_job``); the same verdicts as in
process, for an eval the code location serves or any other."""

from __future__ import annotations

import pytest
import yaml

from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval

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
    # traces and results are graphs of steps (runner/shards.py): their plan steps stand for them here.
    stages = [f"toy__{s}" for s in ("cases", "traces.toy__plan_traces", "results.toy__plan_results", "summary", "drift")]
    assert set(stages) <= set(pids) and len({pids[s] for s in stages}) == len(stages)

    alone = write_eval(tmp_path / "local" / "toy", cases=4)
    assert run_evalh(["run", str(alone)], env, tmp_path).returncode == 0
    [multi] = (evals / "toy" / "runs").iterdir()
    [single] = (tmp_path / "local" / "toy" / "runs").iterdir()
    rates = [{v["name"]: v["cases_passed"] for v in yaml.safe_load((r / "summary.yaml").read_text())["variants"]}
             for r in (multi, single)]
    assert rates[0] == rates[1]


def test_an_eval_the_code_location_does_not_serve_runs_too(tmp_path, env):
    # Each step's process rebuilds the job from the eval file, not from the code location.
    path = write_eval(tmp_path / "toy", cases=2)
    path.write_text(path.read_text().replace("  max_concurrency: 4\n",
                                             "  max_concurrency: 4\n  executor: {type: multiprocess}\n"))
    done = run_evalh(["run", str(path)], {**env, "EVALH_EVALS_DIR": str(tmp_path / "elsewhere")}, tmp_path)
    assert done.returncode == 0, done.stderr
    [run_dir] = (tmp_path / "toy" / "runs").iterdir()
    assert (run_dir / "summary.yaml").exists()
