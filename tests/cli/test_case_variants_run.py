"""`evalh run` of an eval where one case runs on one of its two variants: the excluded cell is
never called, the summary counts the cells that exist, the run is complete, and `evalh compare`
of two such runs pairs them."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.support.evalh_process import run_evalh
from tests.support.evals import STEADY_SYSTEMS, set_case_variants, write_eval

pytestmark = pytest.mark.integration


def test_a_case_on_one_of_two_variants_runs_complete_and_compares(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=3, systems=STEADY_SYSTEMS)
    set_case_variants(path, {1: ["base"]})

    runs = []
    for _ in range(2):
        ran = run_evalh(["run", str(path)], env, tmp_path)
        assert ran.returncode == 0, ran.stderr
        runs.append(sorted(p for p in (tmp_path / "toy" / "runs").iterdir() if (p / "run.json").exists())[-1])
    first, second = runs
    assert first != second

    calls = [tuple(json.loads(line)) for line in (tmp_path / "calls.log").read_text().splitlines()]
    assert ("case_1", "candidate") not in calls and len(calls) == 2 * 5
    summary = yaml.safe_load((second / "summary.yaml").read_text())
    done = summary["completeness"]
    assert (done["complete"], done["expected_cells"], done["present_cells"]) == (True, 5, 5)
    assert done["by_variant"]["candidate"] == {"expected": 2, "present": 2}
    by_name = {v["name"]: v for v in summary["variants"]}
    assert (by_name["base"]["cases_total"], by_name["candidate"]["cases_total"]) == (3, 2)
    assert by_name["candidate"]["cases_errored"] == 0 and by_name["candidate"]["pass_rate"] == 1.0
    # The paired statistics against the baseline variant pair the cases both variants run.
    (delta,) = summary["comparison"]["deltas"]
    assert delta["variant"] == "candidate" and delta["significance"]["cases_compared"] == 2

    compared = run_evalh(["compare", str(first), str(second), "--json"], env, tmp_path)
    assert compared.returncode == 0, compared.stderr
    shown = json.loads(compared.stdout)
    assert shown["comparison"]["regressions_count"] == 0
    rows = {v["variant"]: v for v in shown["variants"]}
    assert (rows["candidate"]["cases_compared"], rows["candidate"]["cases_only_in_a"]) == (2, 0)
    assert rows["base"]["cases_compared"] == 3
