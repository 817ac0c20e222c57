"""Paired statistics against published values.

Reference p-values were computed once with ``scipy.stats.binomtest(min(b, c), b + c, 0.5)``
(scipy 1.17.1; equal to statsmodels' ``mcnemar(exact=True)``) and hardcoded here: scipy is
not a dependency. Reference bootstrap intervals come from a plain case-by-case resampling
(numpy, 100,000 resamples of the cases).
"""

import random

import pytest

from evalh_pipeline.stats.binomial import binomial_variate
from evalh_pipeline.stats.paired import (
    compare_paired,
    format_p_value,
    mcnemar_exact_p_value,
    paired_bootstrap_ci,
    verdict_text,
)
from evalh_pipeline.stats.proportions import tango_interval

SCIPY_BINOMTEST = [
    ((0, 0), 1.0),
    ((0, 1), 1.0),
    ((1, 0), 1.0),
    ((0, 5), 0.0625),
    ((5, 5), 1.0),
    ((3, 7), 0.34375),
    ((12, 4), 0.076812744140625),
    ((10, 0), 0.001953125),
    ((0, 25), 5.960464477539063e-08),
    ((59, 41), 0.08862608011406758),
    ((20, 50), 0.00044028500651396835),
    ((150, 200), 0.008720036530555947),
    ((1000, 1100), 0.03072070786424249),
    ((2600, 2400), 0.004883649737517494),  # 5000 moved cases: the log-space sum
    ((5, 15), 0.04138946533203125),
    ((13, 4), 0.049041748046875),
]


@pytest.mark.parametrize(("counts", "expected"), SCIPY_BINOMTEST)
def test_mcnemar_exact_matches_scipy_binomtest(counts, expected):
    assert mcnemar_exact_p_value(*counts) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_mcnemar_is_symmetric_and_rejects_negative_counts():
    assert mcnemar_exact_p_value(4, 17) == mcnemar_exact_p_value(17, 4)
    with pytest.raises(ValueError):
        mcnemar_exact_p_value(-1, 3)


def test_no_discordant_pairs_is_no_change():
    stats = compare_paired({0.0: 300})
    assert (stats.cases_compared, stats.cases_worse, stats.cases_better) == (300, 0, 0)
    # Tango's score interval: no case moved among 300 still leaves a change of about a point
    # undetected either way; never [0, 0].
    assert stats.pass_rate_delta == 0.0 and stats.delta_ci_method == "tango"
    assert stats.delta_ci95 == pytest.approx(list(tango_interval(0, 0, 300)))
    assert -0.02 < stats.delta_ci95[0] < -0.01 and stats.delta_ci95[1] == pytest.approx(-stats.delta_ci95[0])
    assert stats.mcnemar_p_value == 1.0 and not stats.significant
    assert stats.verdict == "+0.0 pp, 95% CI -1.3 to 1.3, p = 1: no case changed"


def test_all_discordant_in_one_direction():
    stats = compare_paired({-1.0: 40})
    assert stats.pass_rate_delta == -1.0 and stats.delta_ci_method == "tango"
    assert stats.delta_ci95 == pytest.approx(list(tango_interval(40, 0, 40)))
    assert stats.delta_ci95[0] == -1.0 and stats.delta_ci95[1] > -1.0
    assert stats.mcnemar_p_value == pytest.approx(2 * 0.5**40)
    assert stats.significant and stats.significant_regression
    assert stats.verdict.endswith("p < 0.0001: a real regression")


def test_all_discordant_both_ways_is_noise():
    stats = compare_paired({-1.0: 10, 1.0: 10})
    assert stats.pass_rate_delta == 0.0 and stats.mcnemar_p_value == 1.0
    assert stats.verdict.endswith("not distinguishable from noise")


def test_single_case():
    stats = compare_paired({-1.0: 1})
    assert stats.cases_compared == 1 and stats.mcnemar_p_value == 1.0 and not stats.significant
    assert stats.verdict == ("-100.0 pp, 95% CI -100.0 to 58.7, p = 1: not distinguishable from noise "
                             "(only 1 case(s) changed)")
    assert stats.mde == 1.0  # one case cannot show any change short of all of it


def test_nothing_to_compare():
    stats = compare_paired({})
    assert stats.cases_compared == 0 and stats.mcnemar_p_value is None and stats.delta_ci95 is None
    assert stats.verdict == "no case to compare"


@pytest.mark.parametrize(("n", "worse", "better", "reference"), [
    (200, 20, 8, (-0.11, -0.01)),
    (1000, 60, 40, (-0.039, 0.0)),
    (50, 5, 0, (-0.18, -0.02)),
])
def test_bootstrap_interval_matches_case_resampling(n, worse, better, reference):
    ci = paired_bootstrap_ci({-1.0: worse, 1.0: better, 0.0: n - worse - better})
    # One bootstrap's percentiles against another's: within a percentage point, or one
    # step of 1/n where the resampled means are that coarse.
    tolerance = max(0.01, 1 / n) + 1e-9
    assert ci[0] == pytest.approx(reference[0], abs=tolerance)
    assert ci[1] == pytest.approx(reference[1], abs=tolerance)


def test_bootstrap_is_reproducible_and_seeded():
    hist = {-1.0: 37, 1.0: 21, 0.0: 942}
    assert paired_bootstrap_ci(hist) == paired_bootstrap_ci(dict(reversed(list(hist.items()))))
    assert paired_bootstrap_ci(hist, seed=1) != paired_bootstrap_ci(hist, seed=2)


def test_bootstrap_on_pass_fractions_brackets_the_mean():
    hist = {-2 / 3: 3, -1 / 3: 12, 0.0: 70, 1 / 3: 10, 2 / 3: 5}
    stats = compare_paired(hist)
    low, high = stats.delta_ci95
    assert low < stats.pass_rate_delta < high
    assert (stats.cases_worse, stats.cases_better) == (15, 15)


def test_verdict_wording():
    assert verdict_text(-0.04, [-0.061, -0.019], 0.0008, 40, 0) == (
        "-4.0 pp, 95% CI -6.1 to -1.9, p = 0.0008: a real regression")
    assert verdict_text(0.031, [0.012, 0.05], 0.003, 1, 30) == (
        "+3.1 pp, 95% CI 1.2 to 5.0, p = 0.003: a real improvement")
    assert verdict_text(-0.01, [-0.03, 0.01], 0.38, 16, 13).endswith(": not distinguishable from noise")
    assert verdict_text(-0.01, [-0.03, -0.01], 0.51, 6, 3).endswith(
        ": not distinguishable from noise (only 9 case(s) changed)")
    # The same figures judged at a stricter alpha.
    assert verdict_text(-0.04, [-0.061, -0.019], 0.03, 40, 20, alpha=0.01).endswith("noise")


def test_p_value_format():
    assert format_p_value(0.00004) == "p < 0.0001"
    assert format_p_value(0.0008) == "p = 0.0008"
    assert format_p_value(0.04138) == "p = 0.041"
    assert format_p_value(0.34375) == "p = 0.34"
    assert format_p_value(1.0) == "p = 1"


def test_regression_at_a_given_alpha():
    stats = compare_paired({-1.0: 13, 1.0: 4, 0.0: 83})  # p = 0.049
    assert stats.regression_at(0.05) and not stats.regression_at(0.01)
    assert not compare_paired({-1.0: 4, 1.0: 13}).regression_at(0.05)  # an improvement


@pytest.mark.parametrize(("n", "p"), [(10, 0.3), (1000, 0.02), (5000, 0.4), (40, 0.9), (7, 0.0), (7, 1.0)])
def test_binomial_variates_have_the_binomial_mean_and_variance(n, p):
    rng = random.Random(3)
    draws = [binomial_variate(rng, n, p) for _ in range(20000)]
    assert all(0 <= d <= n for d in draws)
    mean = sum(draws) / len(draws)
    var = sum((d - mean) ** 2 for d in draws) / (len(draws) - 1)
    assert mean == pytest.approx(n * p, abs=4 * (n * p * (1 - p) / len(draws)) ** 0.5 + 1e-9)
    assert var == pytest.approx(n * p * (1 - p), rel=0.05, abs=1e-9)
