"""`evalh plan RUN_DIR --mde 0.05`: the cases an eval needs, from a pilot run, as the README's
closed form gives them."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.stats import norm

from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from tests.support.evals import write_eval
from tests.support.paths import REPO

EVALH = [sys.executable, "-m", "evalh_pipeline.cli"]


def _pilot(folder, cluster_by: str | None):
    """A pilot run of 100 cases; `candidate` fails every third case (34) that `base` passes."""
    path = write_eval(folder / "toy", cases=100)
    if cluster_by:
        text = path.read_text()
        path.write_text(text.replace("  baseline_variant: base\n", f"  baseline_variant: base\n  cluster_by: {cluster_by}\n"))
    spec = load_eval(path)
    run_dir = prepare_cases(spec, "pilot").run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    write_summary(spec, run_dir)
    return run_dir


def _plan(run_dir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*EVALH, "plan", str(run_dir.path), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


def test_plan_on_a_pilot_of_100_cases_gives_the_closed_form_count(tmp_path):
    run_dir = _pilot(tmp_path, "metadata.group")
    done = _plan(run_dir, "--mde", "0.05", "--json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    # The README's closed form: n = ceil((z_0.975 + z_0.80)^2 * psi * deff / mde^2), with psi the
    # share of the pilot's cases that moved and deff the clusters' design effect (statsmodels).
    differences = np.array([-1.0 if i % 3 == 0 else 0.0 for i in range(100)])
    groups = np.array([i % 2 for i in range(100)])  # metadata.group: even / odd
    ones = np.ones((100, 1))
    deff = (sm.OLS(differences, ones).fit(cov_type="cluster", cov_kwds={"groups": groups}).bse[0]
            / sm.OLS(differences, ones).fit().bse[0]) ** 2
    z = norm.ppf(0.975) + norm.ppf(0.8)
    assert (row["variant"], row["against"], row["pilot_cases"], row["clusters"]) == ("candidate", "base", 100, 2)
    assert row["discordance"] == 0.34
    assert row["cases_needed"] == math.ceil(z * z * 0.34 / 0.05 ** 2) == 1068
    assert row["design_effect"] == pytest.approx(deff, rel=1e-9)
    assert row["cases_needed_clustered"] == math.ceil(z * z * 0.34 * max(1.0, deff) / 0.05 ** 2)


def test_plan_prints_the_formula_and_says_when_nothing_is_clustered(tmp_path):
    run_dir = _pilot(tmp_path, None)
    done = _plan(run_dir, "--mde", "0.05")
    assert done.returncode == 0, done.stderr
    assert "n = ceil((z_{1-alpha/2} + z_{power})^2 * psi * deff / mde^2)" in done.stdout
    assert "candidate" in done.stdout and " 1068 " in done.stdout
    assert "no clustering: set run.cluster_by" in done.stdout
    clustered = _plan(run_dir, "--mde", "0.05", "--cluster-by", "metadata.group", "--json")
    assert json.loads(clustered.stdout)["rows"][0]["clusters"] == 2


def test_plan_refuses_a_bad_mde_or_cluster_path_in_one_line(tmp_path):
    run_dir = _pilot(tmp_path, None)
    done = _plan(run_dir, "--mde", "0")
    assert done.returncode != 0 and "Invalid value for '--mde': 0.0 is not in the range 0<x<=1." in done.stderr
    bad = _plan(run_dir, "--mde", "0.05", "--cluster-by", "metadata[?(")
    assert bad.returncode != 0 and "invalid field path" in bad.stderr and bad.stdout == ""
