"""The summary asset's metadata for a judge with human labels: its calibration in one line and
each variant's corrected pass rate as a number (for the UI's plots) and as a percentage with
one decimal and its interval, beside the raw rate; nothing of it without labels."""

from __future__ import annotations

import dagster as dg

from evalh_pipeline.defs.evals.metadata import calibration_metadata
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import write_summary
from tests.support.judged_run import judged_run, label_every_cell


def test_a_labelled_judge_adds_its_calibration_and_corrected_rates(tmp_path):
    eval_path, run = judged_run(tmp_path / "toy", "first", cases=12)
    spec = load_eval(eval_path)
    assert calibration_metadata(write_summary(spec, run)) == {}
    # A human agrees with the judge's 4 failures and fails 2 of its passes too: 6 fails, 10 passes.
    assert label_every_cell(run, "toy", "mentions_paris", failed_too=2) == 16
    summary = write_summary(spec, run)
    meta = calibration_metadata(summary)
    (rollup,) = [r for r in summary.by_evaluator if r.evaluator == "mentions_paris"]
    corrected = rollup.by_variant["candidate"].pass_rate_corrected
    assert corrected is not None
    assert meta["judge_calibration/mentions_paris"].startswith("mentions_paris: 16 label(s), agreement 87.5%")
    number = meta["pass_rate_corrected/mentions_paris/candidate"]
    assert isinstance(number, dg.FloatMetadataValue) and number.value == corrected.estimate
    assert meta["pass_rate_corrected_text/mentions_paris/candidate"] == (
        f"{corrected.estimate * 100:.1f}% (95% CI {corrected.ci_low * 100:.1f}–{corrected.ci_high * 100:.1f}%)")
    delta = rollup.by_variant["candidate"].pass_rate_delta_corrected
    assert delta is not None
    assert meta["pass_rate_delta_corrected_pp/mentions_paris/candidate"].value == round(delta.estimate * 100, 1) + 0.0
    assert "pass_rate_delta_corrected_pp/mentions_paris/base" not in meta  # the baseline variant itself
    assert not any("used_lookup" in key for key in meta)  # no labels: nothing said, nothing corrected
