"""A drift across an evaluator edit, end to end on a terminal: run, promote, run again, edit an
evaluator, re-judge, drift. The evaluator-config difference is reported per evaluator, cases
with the same answers are not called regressions of the system, and the printed re-judge
command, pasted, makes the two runs comparable again without calling the system."""

from __future__ import annotations

import shlex

import dagster as dg
import pytest

from tests.support.evalh_process import EVALH

from tests.support.evals import STEADY_SYSTEMS, write_eval
from tests.support.pty_terminal import run_on_terminal

pytestmark = pytest.mark.integration

RERUN_MARK = "(no system call): "


def _evalh(args, env, cwd):
    return run_on_terminal([*EVALH, *map(str, args)], env=env, cwd=cwd)


def _line(text: str, start: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(start))


def test_an_evaluator_edit_is_reported_per_evaluator_and_not_as_a_system_regression(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=4, systems=STEADY_SYSTEMS)
    runs = tmp_path / "toy" / "runs"

    def made() -> list:
        return sorted(p for p in runs.iterdir() if p.name.endswith("_toy"))

    assert _evalh(["run", path], env, tmp_path).returncode == 0
    (baseline,) = made()
    assert _evalh(["promote", baseline], env, tmp_path).returncode == 0
    # The system really changes for candidate: cases 0 and 3 now answer "wrong".
    text = path.read_text()
    path.write_text(text.replace("  - name: candidate\n    adapter: python_function\n    target: stub_agent:run\n",
                                 "  - name: candidate\n    adapter: python_function\n    target: stub_agent:run\n"
                                 "    break_every: 3\n"))
    assert _evalh(["run", path], env, tmp_path).returncode == 0
    current = made()[-1]
    calls = (tmp_path / "calls.log").read_text()

    # The evaluator is made stricter: only case_0's answer ("answer 0 Paris") still passes it.
    path.write_text(path.read_text().replace("    type: contains_text\n",
                                             '    type: contains_text\n    config: {all_of: ["Paris", "answer 0"]}\n'))
    rejudged = _evalh(["re-evaluate", current], env, tmp_path)
    assert rejudged.returncode == 0, rejudged.text
    assert (tmp_path / "calls.log").read_text() == calls  # re-judging called no system
    assert (f"drift vs promoted baseline {baseline.name}: 2 regression(s) (and 5 evaluator-config-only)"
            in rejudged.text)
    assert "evaluator config differs: mentions_paris" in rejudged.text

    drift = _evalh(["drift", current, "--exit-nonzero-on-regression"], env, tmp_path)
    text = drift.text
    assert drift.returncode == 1, text  # candidate's two changed answers are real regressions
    differs = [line for line in text.splitlines() if line.startswith("evaluator config differs:")]
    assert len(differs) == 1 and differs[0].startswith("evaluator config differs: mentions_paris: judged with config ")
    assert "not comparable" in differs[0] and "used_lookup" not in text.split("evaluator config differs")[1]
    assert _line(text, "regressions in candidate") == "regressions in candidate (2): case_0, case_3"
    # base answered the same: only the evaluator moved, so no regression of base is claimed.
    assert not any(line.startswith("regressions in base") for line in text.splitlines())
    assert _line(text, "evaluator-config-only regressions in base").endswith(": case_1, case_2, case_3")
    assert _line(text, "evaluator-config-only regressions in candidate").endswith(": case_1, case_2")
    assert "2 regression(s) (and 5 evaluator-config-only), 0 improvement(s)" in text

    # The command to paste is real: this baseline's folder, as typed from here, no placeholder.
    command = _line(text, "re-judge the promoted baseline").split(RERUN_MARK, 1)[1]
    assert command == f"evalh re-evaluate toy/runs/{baseline.name}"

    # compare says the same of its run A.
    compare = _evalh(["compare", baseline, current], env, tmp_path)
    assert compare.returncode == 0, compare.text
    assert _line(compare.text, "evaluator config differs:") == differs[0]
    assert _line(compare.text, "re-judge the baseline").endswith(RERUN_MARK + command)

    # The drift asset of the re-judged run says the same (Dagster metadata).
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey(["toy", "drift"]))
        metadata = event.asset_materialization.metadata
        assert event.asset_materialization.partition == current.name
        assert [c["evaluator"] for c in metadata["evaluator_configs_differ"].value] == ["mentions_paris"]
        assert metadata["evaluator_config_only_regressions"].value == 5
        assert metadata["system_regressions_count"].value == 2
        assert metadata["rejudge_baseline"].value == f"evalh re-evaluate {shlex.quote(str(baseline))}"
        assert "## Evaluator configs differ" in metadata["report"].value
        # The drift gate counts candidate's two, and says what it left out.
        key = dg.AssetCheckKey(dg.AssetKey(["toy", "drift"]), "no_regressions_vs_promoted_baseline")
        (record,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
        check = record.event.dagster_event.event_specific_data
        assert not check.passed and check.metadata["regressions"].value == 2
        assert check.metadata["evaluator_config_only_regressions"].value == 5
        assert "5 evaluator-config-only left out" in check.description

    # Pasted, it re-judges the baseline with today's evaluators (no system call), and the two
    # runs compare again: only candidate's changed answer on case_0 is left as a regression.
    pasted = _evalh([*shlex.split(command)[1:]], env, tmp_path)
    assert pasted.returncode == 0, pasted.text
    assert (tmp_path / "calls.log").read_text() == calls
    again = _evalh(["drift", current], env, tmp_path)
    assert again.returncode == 0, again.text
    assert "evaluator config differs" not in again.text and "evaluator-config-only" not in again.text
    assert _line(again.text, "regressions in candidate") == "regressions in candidate (1): case_0"
