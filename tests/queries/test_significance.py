"""Paired statistics in the summary (variant vs baseline variant) and in compare/drift
(run vs run), overall and per evaluator, and the repeat figures of several samples per case."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.queries.compare import compare_runs
from evalh_pipeline.queries.report import drift_markdown, points, pp, render_report
from evalh_pipeline.queries.summary import summarize_run
from evalh_pipeline.store.run_dir import RunDirectory

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc).isoformat()


def _write(run_dir: RunDirectory, verdicts: dict[tuple[str, str, int], dict[str, bool]]) -> RunDirectory:
    """verdicts: (case, variant, sample) -> evaluator -> passed."""
    run_dir.path.mkdir(parents=True)
    with run_dir.traces.open("w") as traces, run_dir.results.open("w") as results:
        for (case, variant, sample), by_evaluator in verdicts.items():
            cell = {"schema_version": "1.0", "run_id": run_dir.run_id, "case_id": case, "variant_name": variant,
                    "sample": sample, "started_at": T0, "finished_at": T0}
            traces.write(json.dumps({**cell, "latency_ms": 10, "input": {}, "output": {}, "metrics": {},
                                     "error": None}) + "\n")
            for evaluator, passed in by_evaluator.items():
                results.write(json.dumps({**cell, "evaluator": evaluator, "evaluator_type": "t", "passed": passed,
                                          "score": float(passed), "reason": "", "latency_ms": 0, "error": None}) + "\n")
    return run_dir


def _summary(run_dir: RunDirectory):
    return summarize_run(run_dir, variant_order=["base", "new"], pass_criteria=PassCriteria(),
                         baseline_variant="base", config_path="eval.yaml", config_hash="h", cases_total=0)


def _two_variants(worse: int, better: int, same: int) -> dict:
    """Cases where ``new`` loses (on evaluator x), wins (on x) and ties with ``base``;
    evaluator y always passes."""
    verdicts = {}
    for i in range(worse + better + same):
        case = f"c{i:04d}"
        before, after = (True, False) if i < worse else (False, True) if i < worse + better else (True, True)
        verdicts[(case, "base", 0)] = {"x": before, "y": True}
        verdicts[(case, "new", 0)] = {"x": after, "y": True}
    return verdicts


def test_summary_reports_a_significant_regression_with_its_interval(tmp_path):
    summary = _summary(_write(RunDirectory(tmp_path / "r1"), _two_variants(worse=20, better=4, same=176)))
    (delta,) = summary.comparison.deltas
    stats = delta.significance
    assert (stats.cases_compared, stats.cases_worse, stats.cases_better) == (200, 20, 4)
    assert stats.pass_rate_delta == pytest.approx(-0.08)
    assert stats.mcnemar_p_value == pytest.approx(0.001543879508972168, rel=1e-9)  # scipy binomtest(4, 24)
    low, high = stats.delta_ci95
    assert low < -0.08 < high < 0
    assert stats.significant and stats.verdict.startswith("-8.0 pp, 95% CI ")
    assert stats.verdict.endswith(", p = 0.0015: a real regression")
    # Per evaluator: x carries the regression, y never moved.
    assert delta.by_evaluator["x"].mcnemar_p_value == stats.mcnemar_p_value
    assert delta.by_evaluator["y"].verdict.endswith("no case changed")
    dumped = summary.model_dump(mode="json")["comparison"]["deltas"][0]
    assert set(dumped["significance"]) >= {"mcnemar_p_value", "delta_ci95", "verdict", "significant"}


def test_summary_calls_a_small_difference_noise(tmp_path):
    summary = _summary(_write(RunDirectory(tmp_path / "r1"), _two_variants(worse=6, better=3, same=91)))
    stats = summary.comparison.deltas[0].significance
    assert stats.mcnemar_p_value == pytest.approx(0.5078125)  # scipy binomtest(3, 9)
    assert not stats.significant
    assert stats.verdict.endswith("p = 0.51: not distinguishable from noise (only 9 case(s) changed)")
    report = render_report(summary, "toy")
    assert "- `new` vs `base`: -3.0 pp, 95% CI" in report
    assert "| new | x | 100 | 6 | 3 | -3.0 pp |" in report


def test_repeats_give_pass_at_k_flaky_cases_and_fraction_based_flips(tmp_path):
    verdicts = {}
    # base: c0 passes 3/3, c1 1/3 (flaky), c2 0/3; new: c0 2/3 (flaky, worse), c1 3/3 (better), c2 0/3.
    for case, base, new in (("c0", 3, 2), ("c1", 1, 3), ("c2", 0, 0)):
        for s in range(3):
            verdicts[(case, "base", s)] = {"x": s < base}
            verdicts[(case, "new", s)] = {"x": s < new}
    summary = _summary(_write(RunDirectory(tmp_path / "r1"), verdicts))
    base, new = summary.variants
    assert base.repeats.samples_per_case == 3 and base.repeats.flaky_cases == ["c1"]
    assert new.repeats.flaky_cases == ["c0"]
    assert base.repeats.case_pass_fractions == {"3/3": 1, "1/3": 1, "0/3": 1}
    assert base.repeats.pass_at_k[1] == pytest.approx(4 / 9)
    assert base.repeats.pass_at_k[3] == pytest.approx(2 / 3)
    assert base.repeats.pass_hat_k[3] == pytest.approx(1 / 3)
    (delta,) = summary.comparison.deltas
    # Fractions, not "all samples passed": c0 went 3/3 -> 2/3, c1 1/3 -> 3/3.
    assert (delta.regressions, delta.improvements) == (["c0"], ["c1"])
    assert delta.significance.pass_rate_delta == pytest.approx((-1 / 3 + 2 / 3) / 3)
    report = render_report(summary, "toy")
    assert "## Repeats" in report and "| base | 44.4% | " in report and "Flaky in `new` (1): `c0`" in report


def test_one_sample_per_case_has_no_repeat_figures(tmp_path):
    summary = _summary(_write(RunDirectory(tmp_path / "r1"), _two_variants(1, 1, 1)))
    assert all(v.repeats is None for v in summary.variants)
    assert "## Repeats" not in render_report(summary, "toy")


def test_compare_pairs_runs_case_by_case(tmp_path):
    before = {(f"c{i}", "new", 0): {"x": True, "y": i < 200 or i % 2 == 0} for i in range(300)}
    after = {key: {"x": int(key[0][1:]) >= 30, "y": value["y"]} for key, value in before.items()}
    a = _write(RunDirectory(tmp_path / "a"), before)
    b = _write(RunDirectory(tmp_path / "b"), after)
    report = compare_runs(a, b)
    (delta,) = report.comparison.deltas
    assert delta.significance.cases_worse == 30 and delta.significance.cases_better == 0
    assert delta.significance.mcnemar_p_value == pytest.approx(2 * 0.5**30)
    assert delta.significance.verdict.startswith("-10.0 pp, 95% CI -13.")
    assert delta.by_evaluator["y"].cases_worse == 0
    assert report.has_significant_regression(0.05) and not report.has_significant_regression(1e-12)
    as_json = json.loads(report.to_json())
    assert as_json["comparison"]["deltas"][0]["significance"]["mcnemar_p_value"] == pytest.approx(2 * 0.5**30)
    assert as_json["comparison"]["deltas"][0]["by_evaluator"]["x"]["delta_ci95"][1] < 0
    # The JSON mirrors the DataModel's ComparisonReport, field for field.
    assert report.comparison.deltas[0].significance.cases_worse == 30
    text = drift_markdown("toy", "b", report)
    assert "## Significance" in text and "a real regression" in text


def _clustered_run(tmp_path, cluster_by):
    """12 documents of 5 questions; on ``new`` every question of documents 0-3 fails that passed."""
    verdicts = {}
    cases = []
    for doc in range(12):
        for q in range(5):
            case = f"d{doc:02d}q{q}"
            cases.append({"id": case, "input": {}, "metadata": {"doc": f"doc{doc}"}})
            verdicts[(case, "base", 0)] = {"x": True, "y": q != 0}
            verdicts[(case, "new", 0)] = {"x": doc >= 4, "y": q != 0}
    run_dir = _write(RunDirectory(tmp_path / "r"), verdicts)
    run_dir.cases.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return summarize_run(run_dir, variant_order=["base", "new"], pass_criteria=PassCriteria(),
                         baseline_variant="base", config_path="eval.yaml", config_hash="h", cluster_by=cluster_by)


def test_cluster_by_widens_the_summary_intervals_and_reports_the_design(tmp_path):
    from statsmodels.stats.proportion import proportion_confint

    naive = _clustered_run(tmp_path / "naive", None)
    clustered = _clustered_run(tmp_path / "clustered", "metadata.doc")
    new_naive, new = naive.variants[1], clustered.variants[1]
    # 32 of 60 cases pass (q0 fails on y everywhere; documents 0-3 fail on x).
    assert (new.cases_passed, new.cases_total) == (32, 60)
    assert new_naive.pass_rate_ci == pytest.approx(list(proportion_confint(32, 60, method="wilson")))
    assert new_naive.clusters is None
    assert new.clusters == 12 and new.design_effect > 1
    low, high = new.pass_rate_ci
    assert low < new_naive.pass_rate_ci[0] and high > new_naive.pass_rate_ci[1]
    delta, delta_naive = clustered.comparison.deltas[0].significance, naive.comparison.deltas[0].significance
    assert delta.clusters == 12 and delta.test == "mcnemar_clustered" and delta.design_effect > 3
    assert delta.pass_rate_delta == delta_naive.pass_rate_delta == pytest.approx(-16 / 60)  # q0 failed on base too
    assert delta.mde > delta_naive.mde and delta.mcnemar_p_value > delta_naive.mcnemar_p_value


def test_per_evaluator_p_values_carry_their_benjamini_hochberg_adjustment(tmp_path):
    from statsmodels.stats.multitest import multipletests

    summary = _clustered_run(tmp_path, None)
    by_evaluator = summary.comparison.deltas[0].by_evaluator
    raw = [by_evaluator[e].mcnemar_p_value for e in ("x", "y")]
    expected = multipletests(raw, method="fdr_bh")[1]
    assert [by_evaluator[e].p_value_adjusted for e in ("x", "y")] == pytest.approx(list(expected))
    assert {by_evaluator[e].adjustment for e in ("x", "y")} == {"benjamini_hochberg"}


def test_report_shows_each_interval_beside_its_rate_and_what_the_eval_can_see(tmp_path):
    summary = _clustered_run(tmp_path, "metadata.doc")
    report = render_report(summary, "demo", "base")
    new = summary.variants[1]
    low, high = new.pass_rate_ci
    assert f"| new | 60 | 32 | 0 | 53.3% | {low:.1%}–{high:.1%} |".replace("%–", "–") in report
    assert "`new` 12 clusters, design effect 3.06" in report
    assert "`base` 12 clusters, design effect 0.00 (below 1: taken as 1)" in report
    mde = summary.comparison.deltas[0].significance.mde
    assert f"this eval can see drops of {mde * 100:.1f} points or more (12 clusters, design effect" in report
    assert "| MDE | McNemar p | p (BH) | verdict |" in report


def _scored(run_dir: RunDirectory, scores: dict[tuple[str, str], float]) -> RunDirectory:
    """One `rubric` evaluator with a 1-5 score per (case, variant); passed when the score is >= 3."""
    run_dir.path.mkdir(parents=True)
    with run_dir.traces.open("w") as traces, run_dir.results.open("w") as results:
        for (case, variant), score in scores.items():
            cell = {"schema_version": "1.0", "run_id": run_dir.run_id, "case_id": case, "variant_name": variant,
                    "sample": 0, "started_at": T0, "finished_at": T0}
            traces.write(json.dumps({**cell, "latency_ms": 10, "input": {}, "output": {}, "metrics": {},
                                     "error": None}) + "\n")
            results.write(json.dumps({**cell, "evaluator": "rubric", "evaluator_type": "llm_judge",
                                      "passed": score >= 3, "score": score, "reason": "", "latency_ms": 0,
                                      "error": None}) + "\n")
    return run_dir


def test_rubric_scores_get_a_paired_delta_interval_and_wilcoxon_test(tmp_path):
    from scipy.stats import wilcoxon

    rng = __import__("random").Random(5)
    base = {f"c{i:03d}": rng.choice([2, 3, 4, 4, 5]) for i in range(80)}
    new = {case: max(1, min(5, s + rng.choice([-2, -1, -1, 0, 0, 0, 1]))) for case, s in base.items()}
    scores = {**{(c, "base"): float(s) for c, s in base.items()}, **{(c, "new"): float(s) for c, s in new.items()}}
    summary = _summary(_scored(RunDirectory(tmp_path / "r"), scores))
    stats = summary.comparison.deltas[0].by_evaluator["rubric"]
    differences = [new[c] - base[c] for c in base]
    assert stats.score_delta == pytest.approx(sum(differences) / 80)
    low, high = stats.score_delta_ci95
    assert low < stats.score_delta < high
    expected = wilcoxon(differences, zero_method="wilcox", correction=False, method="asymptotic").pvalue
    assert stats.wilcoxon_p_value == pytest.approx(expected, rel=1e-9)
    # The same figures when the two variants are two runs compared.
    run_a = _scored(RunDirectory(tmp_path / "a"), {(c, "v"): float(s) for c, s in base.items()})
    run_b = _scored(RunDirectory(tmp_path / "b"), {(c, "v"): float(s) for c, s in new.items()})
    compared = compare_runs(run_a, run_b).comparison.deltas[0].by_evaluator["rubric"]
    assert compared.score_delta == pytest.approx(stats.score_delta)
    assert compared.wilcoxon_p_value == pytest.approx(expected, rel=1e-9)
    assert "| new | rubric | " in render_report(summary, "demo", "base")


def test_compare_gate_adjusts_its_variants_with_holm_and_clusters_by_run_b(tmp_path):
    from statsmodels.stats.multitest import multipletests

    # Run A passes everything; in run B `x` loses 7 of 60 cases (p = 0.016), `y` 6 (p = 0.031).
    run_a = _write(RunDirectory(tmp_path / "a"), {(f"c{i:02d}", v, 0): {"e": True} for i in range(60) for v in "xy"})
    verdicts = {(f"c{i:02d}", v, 0): {"e": not (i < lost)} for i in range(60) for v, lost in (("x", 7), ("y", 6))}
    run_b = _write(RunDirectory(tmp_path / "b"), verdicts)
    report = compare_runs(run_a, run_b)
    raw = {d.variant: d.significance.mcnemar_p_value for d in report.comparison.deltas}
    assert raw["x"] < 0.05 and raw["y"] < 0.05
    adjusted = multipletests([raw["x"], raw["y"]], method="holm")[1]
    assert report.has_significant_regression(0.05) == (min(adjusted) < 0.05)
    assert not report.has_significant_regression(min(adjusted))  # the adjusted p, not the raw one, is judged
    # Run B's config snapshot says how to cluster: by metadata.doc, 10 documents of 6.
    run_b.config_yaml.write_text("run:\n  cluster_by: metadata.doc\n")
    run_b.cases.write_text("".join(json.dumps({"id": f"c{i:02d}", "metadata": {"doc": i // 6}}) + "\n"
                                   for i in range(60)))
    clustered = compare_runs(run_a, run_b).comparison.deltas[0].significance
    assert clustered.clusters == 10 and clustered.test == "mcnemar_clustered"


def test_deltas_read_in_points_rounded_to_one_decimal_without_float_noise():
    assert points(-0.19999999999999996) == -20.0 and pp(-0.19999999999999996) == "-20.0 pp"
    assert points(-0.0001) == 0.0 and str(points(-0.0001)) == "0.0"  # never -0.0
    assert points(2 / 3) == 66.7 and pp(2 / 3) == "+66.7 pp"
