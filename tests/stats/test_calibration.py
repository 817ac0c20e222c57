"""Judge calibration estimators against references on fixed data, and the corrected
interval's coverage in a deterministic simulation."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa
from statsmodels.stats.proportion import proportion_confint

from evalh_pipeline.stats.calibration import (
    ConfusionCounts,
    agreement,
    corrected_paired_delta,
    cohens_kappa,
    correction_refusal,
    rogan_gladen,
    sensitivity,
    specificity,
)

FIXED = ConfusionCounts(tp=41, fn=7, fp=9, tn=23)


def test_counts_human_and_judge_pairs():
    pairs = [(True, True)] * 3 + [(True, False)] * 2 + [(False, True)] + [(False, False)] * 4
    assert ConfusionCounts.of(pairs) == ConfusionCounts(tp=3, fn=2, fp=1, tn=4)


def test_kappa_matches_statsmodels():
    table = np.array([[FIXED.tp, FIXED.fn], [FIXED.fp, FIXED.tn]])
    assert cohens_kappa(FIXED) == pytest.approx(sm_kappa(table).kappa, abs=1e-12)
    assert agreement(FIXED) == pytest.approx(64 / 80)


def test_sensitivity_and_specificity_carry_wilson_intervals_of_statsmodels():
    sens, spec = sensitivity(FIXED), specificity(FIXED)
    assert sens is not None and spec is not None
    assert sens.estimate == pytest.approx(41 / 48) and spec.estimate == pytest.approx(23 / 32)
    low, high = proportion_confint(41, 48, method="wilson")
    assert (sens.ci_low, sens.ci_high) == pytest.approx((low, high), abs=1e-9)
    low, high = proportion_confint(23, 32, method="wilson")
    assert (spec.ci_low, spec.ci_high) == pytest.approx((low, high), abs=1e-9)


def test_rogan_gladen_estimate_matches_the_closed_form():
    corrected = rogan_gladen(60, 100, FIXED)
    assert corrected is not None
    sens, spec = 41 / 48, 23 / 32
    assert corrected.estimate == pytest.approx((0.6 + spec - 1) / (sens + spec - 1))
    assert corrected.ci_low < corrected.estimate < corrected.ci_high


def test_corrected_interval_is_wider_with_fewer_labels():
    many = rogan_gladen(60, 100, ConfusionCounts(tp=410, fn=70, fp=90, tn=230))
    few = rogan_gladen(60, 100, FIXED)
    assert many is not None and few is not None
    assert few.ci_high - few.ci_low > many.ci_high - many.ci_low


def test_too_few_labels_or_a_chance_judge_is_not_corrected():
    assert rogan_gladen(60, 100, ConfusionCounts(tp=10, fn=1, fp=1, tn=3)) is None
    assert "too few labels" in (correction_refusal(ConfusionCounts(tp=10, fn=1, fp=1, tn=3)) or "")
    chance = ConfusionCounts(tp=5, fn=5, fp=5, tn=5)
    assert rogan_gladen(60, 100, chance) is None
    assert "no better than chance" in (correction_refusal(chance) or "")


def test_corrected_interval_covers_the_true_rate_in_simulation():
    # A judge with sensitivity 0.85 and specificity 0.80 scores 300 cells of a system whose
    # true pass rate is 0.6; 200 cells carry human labels. At 95 % the interval must cover
    # the true rate in at least 93 % of 1,000 runs.
    rng = np.random.default_rng(20251128)
    runs, n, labelled, truth, sens, spec = 1000, 300, 200, 0.6, 0.85, 0.80
    observed = truth * sens + (1 - truth) * (1 - spec)
    passed = rng.binomial(n, observed, runs)
    human_passed = rng.binomial(labelled, truth, runs)
    tp = rng.binomial(human_passed, sens)
    tn = rng.binomial(labelled - human_passed, spec)
    covered = 0
    for k in range(runs):
        counts = ConfusionCounts(tp=int(tp[k]), fn=int(human_passed[k] - tp[k]),
                                 fp=int(labelled - human_passed[k] - tn[k]), tn=int(tn[k]))
        corrected = rogan_gladen(int(passed[k]), n, counts)
        assert corrected is not None
        covered += corrected.ci_low <= truth <= corrected.ci_high
    assert covered >= 930, covered


def test_corrected_paired_delta_is_the_observed_delta_over_youdens_j():
    # 10 cases the first variant passed and the second failed, 4 the other way, of 100.
    pairs = [(True, False)] * 10 + [(False, True)] * 4 + [(True, True)] * 50 + [(False, False)] * 36
    delta = corrected_paired_delta(pairs, FIXED)
    assert delta is not None
    assert delta.estimate == pytest.approx(-0.06 / (41 / 48 + 23 / 32 - 1))
    assert delta.ci_low < delta.estimate < delta.ci_high
    assert corrected_paired_delta([], FIXED) is None
    assert corrected_paired_delta(pairs, ConfusionCounts(tp=10, fn=1, fp=1, tn=3)) is None  # too few labels
    # No discordant pair: the interval still carries the labels' uncertainty, never [0, 0]
    # around a nonzero delta; with a zero delta it is centred on zero.
    same = corrected_paired_delta([(True, True)] * 50 + [(False, False)] * 50, FIXED)
    assert same is not None and same.estimate == 0.0 and same.ci_low <= 0.0 <= same.ci_high


def test_corrected_paired_delta_covers_the_true_difference_in_simulation():
    # Paired true outcomes with P(1,1)=.45, P(1,0)=.15, P(0,1)=.05, P(0,0)=.35: the first
    # variant's true rate .6, the second's .5. A judge (sensitivity .85, specificity .80)
    # scores 300 cases of each; 200 independent cells carry human labels.
    rng = np.random.default_rng(20261129)
    runs, n, labelled, sens, spec, truth = 1000, 300, 200, 0.85, 0.80, -0.10
    covered = 0
    for _ in range(runs):
        kind = rng.choice(4, size=n, p=[0.45, 0.15, 0.05, 0.35])
        first_true, second_true = np.isin(kind, (0, 1)), np.isin(kind, (0, 2))

        def judge(true):
            u = rng.random(n)
            return np.where(true, u < sens, u >= spec)

        first, second = judge(first_true), judge(second_true)
        human = rng.random(labelled) < 0.55
        verdict = np.where(human, rng.random(labelled) < sens, rng.random(labelled) >= spec)
        counts = ConfusionCounts.of(zip(human.tolist(), verdict.tolist()))
        delta = corrected_paired_delta(zip(first.tolist(), second.tolist()), counts)
        assert delta is not None
        covered += delta.ci_low <= truth <= delta.ci_high
    assert covered >= 930, covered
