"""`evalh promote` (a Dagster run of the eval's promote job on the run's partition) and `evalh drift` (read-only), the CI gate."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from evalh_pipeline.runner.drift import load_drift
from evalh_pipeline.store.run_dir import RunDirectory
from tests.cli.support import BROKEN, GOOD, make_run
from tests.support.evalh_process import run_evalh
from tests.support.paths import REPO

@pytest.fixture
def setup(tmp_path, env):
    folder = tmp_path / "evals" / "toy"
    good = make_run(folder, GOOD, "r1_good")
    broken = make_run(folder, BROKEN, "r2_broken")
    # The user's instance exists before they promote (its storage is created once).
    dg.DagsterInstance.from_config(env["DAGSTER_HOME"]).dispose()
    return good, broken, {**env, "COLUMNS": "200"}


def _evalh(env, *args):
    return run_evalh([str(a) for a in args], env, REPO)


def test_drift_without_a_promoted_baseline_says_how_to_get_one(setup):
    _, broken, env = setup
    proc = _evalh(env, "drift", broken)
    assert proc.returncode == 2
    assert "no promoted baseline" in proc.stderr and "evalh promote" in proc.stderr


def test_promote_then_drift_gates_on_regressions_against_the_baseline(setup):
    good, broken, env = setup
    promoted = _evalh(env, "promote", good)
    assert promoted.returncode == 0, promoted.stderr
    assert "baseline of toy is now r1_good" in promoted.stdout

    gate = _evalh(env, "drift", broken, "--exit-nonzero-on-regression", "--json")
    assert gate.returncode == 1, gate.stderr
    report = json.loads(gate.stdout)["comparison"]
    assert report["kind"] == "drift" and report["baseline_run_id"] == "r1_good"
    (candidate,) = [d for d in report["deltas"] if d["variant"] == "candidate"]
    assert candidate["regressions"] == ["case_0", "case_3", "case_6"]
    assert candidate["significance"]["mcnemar_p_value"] == 0.25  # 3 worse, 0 better
    assert candidate["significance"]["verdict"].endswith(
        "p = 0.25: not distinguishable from noise (only 3 case(s) changed)")

    # Three flipped cases out of seven are not a significant regression: the significance gate lets them through.
    noise = _evalh(env, "drift", broken, "--exit-nonzero-on-regression", "--significance", "0.05")
    assert noise.returncode == 0, noise.stderr
    assert "candidate: -42.9 pp, 95% CI" in noise.stdout and "not distinguishable from noise" in noise.stdout
    # Two variants are tested: Holm doubles the smaller p-value (0.25 -> 0.5) before judging it.
    holm = _evalh(env, "drift", broken, "--exit-nonzero-on-regression", "--significance", "0.3")
    assert holm.returncode == 0, holm.stderr
    loose = _evalh(env, "drift", broken, "--exit-nonzero-on-regression", "--significance", "0.6")
    assert loose.returncode == 1
    bad = _evalh(env, "drift", broken, "--significance", "5")
    assert bad.returncode == 1 and "--significance" in bad.stderr  # a usage error

    assert _evalh(env, "drift", good, "--exit-nonzero-on-regression").returncode == 0

    again = _evalh(env, "promote", broken)
    assert "is now r2_broken (was r1_good)" in again.stdout
    # Each promotion is a Dagster run of toy__promote on the promoted run's partition, done
    # when the command returns.
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        records = instance.fetch_materializations(dg.AssetKey(["toy", "baseline"]), limit=10).records
        runs = instance.get_runs(dg.RunsFilter(job_name="toy__promote"))
    recorded = {r.asset_materialization.metadata["run_id"].value:
                r.asset_materialization.metadata["previous_run_id"].value for r in records}
    assert recorded == {"r1_good": "", "r2_broken": "r1_good"}
    assert sorted(r.tags["dagster/partition"] for r in runs) == ["r1_good", "r2_broken"]
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)


def test_a_rematerialized_run_reports_its_drift_against_the_promoted_baseline(setup):
    good, _, env = setup
    assert _evalh(env, "promote", good).returncode == 0
    proc = _evalh(env, "re-evaluate", good)
    assert proc.returncode == 0, proc.stderr
    assert "drift vs promoted baseline r1_good: 0 regression(s), 0 improvement(s)" in proc.stdout
    drift = load_drift(RunDirectory(good))
    assert (drift["status"], drift["baseline_run_id"]) == ("compared", "r1_good")


def test_a_run_without_a_promoted_baseline_prints_the_promote_command_for_that_run(setup):
    good, _, env = setup
    proc = _evalh(env, "re-evaluate", good)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("drift: no promoted baseline"))
    assert "<run_id>" not in line
    promote = line.split("(evalh promote ", 1)[1].rstrip(")")
    # evalh ran in REPO: the printed path, pasted there, names this run's folder.
    assert (REPO / promote).resolve() == Path(good).resolve()
