"""Through the real `evalh` CLI: run an eval, import human labels, re-evaluate, and the
summary, report.md and the terminal show the judge's calibration and the corrected rate;
a new run with the same answers carries the labels."""

from __future__ import annotations

import pytest

from evalh_pipeline.common.yaml_files import load_yaml_text
from evalh_pipeline.stats.calibration import ConfusionCounts, rogan_gladen
from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval
from tests.support.paths import REPO


@pytest.mark.e2e
def test_labels_calibrate_the_judge_and_correct_the_pass_rate(tmp_path, env):
    folder = tmp_path / "toy"
    eval_yaml = write_eval(folder, cases=12)
    first = run_evalh(["run", str(eval_yaml)], env, REPO, timeout=600)
    assert first.returncode == 0, first.stderr
    (run,) = [p for p in (folder / "runs").iterdir() if (p / "run.json").exists()]

    # `candidate` fails mentions_paris on case_0, 3, 6, 9; everything else passes. A human
    # agrees on base case_0-5 (passed) and the candidate's failures, and fails base case_6-8.
    rows = ([f"case_{i},base,mentions_paris,true" for i in range(6)]
            + [f"case_{i},base,mentions_paris,false" for i in (6, 7, 8)]
            + [f"case_{i},candidate,mentions_paris,false" for i in (0, 3, 6, 9)])
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,variant_name,evaluator,passed\n" + "\n".join(rows) + "\n")
    imported = run_evalh(["label", "import", str(labels), "--eval", str(eval_yaml)], env, REPO, timeout=600)
    assert imported.returncode == 0, imported.stderr
    assert "13 of 13 label(s) matched a judged cell" in imported.stdout

    again = run_evalh(["re-evaluate", str(run)], env, REPO, timeout=600)
    assert again.returncode == 0, again.stderr
    summary = load_yaml_text((run / "summary.yaml").read_text())
    rollup = {r["evaluator"]: r for r in summary["by_evaluator"]}
    calibration = rollup["mentions_paris"]["calibration"]
    assert (calibration["labels"], calibration["agreement"]) == (13, pytest.approx(10 / 13))
    assert calibration["sensitivity"]["estimate"] == 1.0 and calibration["specificity"]["estimate"] == pytest.approx(4 / 7)
    assert calibration["note"] is None
    assert rollup["used_lookup"]["calibration"] is None
    expected = rogan_gladen(8, 12, ConfusionCounts(tp=6, fn=0, fp=3, tn=4))
    assert expected is not None
    corrected = rollup["mentions_paris"]["by_variant"]["candidate"]["pass_rate_corrected"]
    assert corrected == {"estimate": pytest.approx(expected.estimate), "ci_low": pytest.approx(expected.ci_low),
                         "ci_high": pytest.approx(expected.ci_high), "method": "rogan_gladen_delta", "judged": 12}
    assert corrected["ci_low"] <= corrected["estimate"] <= corrected["ci_high"]
    # The candidate against the baseline variant, paired by case and corrected the same way.
    delta = rollup["mentions_paris"]["by_variant"]["candidate"]["pass_rate_delta_corrected"]
    assert delta["method"] == "rogan_gladen_paired_delta" and delta["judged"] == 12
    assert delta["ci_low"] <= delta["estimate"] <= delta["ci_high"]
    assert rollup["mentions_paris"]["by_variant"]["base"]["pass_rate_delta_corrected"] is None
    assert "vs baseline, corrected" in again.stdout
    assert "## Judge calibration (human labels)" in (run / "report.md").read_text()
    assert f"corrected {expected.estimate:.1%}" in (run / "report.md").read_text()
    assert "judge mentions_paris: 13 label(s), agreement 76.9%" in again.stdout
    assert f"candidate: mentions_paris pass rate 66.7% · corrected {expected.estimate:.1%}" in again.stdout

    # A new run gives the same answers: the labels carry to it, and its summary is corrected too.
    second = run_evalh(["run", str(eval_yaml)], env, REPO, timeout=600)
    assert second.returncode == 0, second.stderr
    (newer,) = [p for p in (folder / "runs").iterdir() if (p / "run.json").exists() and p != run]
    rollup = {r["evaluator"]: r for r in load_yaml_text((newer / "summary.yaml").read_text())["by_evaluator"]}
    assert rollup["mentions_paris"]["calibration"]["labels"] == 13
    assert rollup["mentions_paris"]["by_variant"]["candidate"]["pass_rate_corrected"] == corrected
    assert "judge mentions_paris: 13 label(s)" in second.stdout


@pytest.mark.e2e
def test_too_few_labels_are_reported_and_nothing_is_corrected(tmp_path, env):
    folder = tmp_path / "toy"
    eval_yaml = write_eval(folder, cases=3)
    assert run_evalh(["run", str(eval_yaml)], env, REPO, timeout=600).returncode == 0
    (run,) = [p for p in (folder / "runs").iterdir() if (p / "run.json").exists()]
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,variant_name,evaluator,passed\ncase_1,base,mentions_paris,true\n")
    assert run_evalh(["label", "import", str(labels), "--eval", str(eval_yaml)], env, REPO, timeout=600).returncode == 0
    again = run_evalh(["re-evaluate", str(run)], env, REPO, timeout=600)
    assert again.returncode == 0, again.stderr
    summary = load_yaml_text((run / "summary.yaml").read_text())
    (rollup,) = [r for r in summary["by_evaluator"] if r["evaluator"] == "mentions_paris"]
    assert rollup["calibration"]["labels"] == 1
    assert rollup["calibration"]["note"].startswith("too few labels to correct: 1 human passes and 0 human failures")
    assert all(v["pass_rate_corrected"] is None for v in rollup["by_variant"].values())
    assert "too few labels to correct" in again.stdout
