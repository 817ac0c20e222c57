"""Wilson's and Tango's intervals and the power of a paired comparison, against statsmodels,
a numerical maximum-likelihood reference and a published example."""

from __future__ import annotations

import math

import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

from evalh_pipeline.stats.proportions import (
    cases_needed,
    minimum_detectable_effect,
    tango_interval,
    wilson_interval,
)


@pytest.mark.parametrize("successes, n", [(0, 1), (0, 30), (1, 30), (12, 21), (29, 30), (30, 30), (571, 1000)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(successes, n, confidence):
    expected = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
    assert wilson_interval(successes, n, confidence=confidence) == pytest.approx(expected, abs=1e-12)


def test_wilson_with_a_design_effect_is_wilson_on_the_effective_sample_size():
    # Rao-Scott: 120 of 200 clustered cases with a design effect of 2.5 weigh as 48 of 80.
    assert wilson_interval(120, 200, design_effect=2.5) == pytest.approx(proportion_confint(48, 80, method="wilson"))
    assert wilson_interval(120, 200, design_effect=0.5) == wilson_interval(120, 200)  # never narrower than naive
    assert wilson_interval(0, 0) is None


def _score_statistic_by_numerical_mle(delta: float, better: int, worse: int, n: int) -> float:
    """Tango's statistic with the constrained MLE of P(worse) found by numerical optimisation
    of the multinomial likelihood under (P(better) - P(worse)) == delta."""
    rest = n - better - worse
    low, high = max(0.0, -delta) + 1e-12, (1.0 - delta) / 2.0 - 1e-12

    def negative_log_likelihood(q: float) -> float:
        return -(better * math.log(q + delta) + worse * math.log(q) + rest * math.log(1.0 - 2.0 * q - delta))

    q = minimize_scalar(negative_log_likelihood, bounds=(low, high), method="bounded",
                        options={"xatol": 1e-13}).x
    return (better - worse - n * delta) / math.sqrt(n * (2.0 * q + delta * (1.0 - delta)))


@pytest.mark.parametrize("worse, better, n", [(7, 1, 21), (3, 1, 50), (12, 4, 200), (1, 2, 30)])
def test_tango_bounds_are_where_the_score_test_rejects_by_a_numerical_mle(worse, better, n):
    low, high = tango_interval(worse, better, n)
    z = norm.ppf(0.975)
    assert _score_statistic_by_numerical_mle(low, better, worse, n) == pytest.approx(z, abs=1e-4)
    assert _score_statistic_by_numerical_mle(high, better, worse, n) == pytest.approx(-z, abs=1e-4)


def test_tango_reproduces_the_published_airway_example():
    # Fagerland, Lydersen & Laake 2013 (Stat. Methods Med. Res.), the bronchial
    # hyper-responsiveness data (n12 = 1, n21 = 7, n = 21): Tango's interval -0.517 to -0.026.
    low, high = tango_interval(7, 1, 21)
    assert (round(low, 3), round(high, 3)) == (-0.517, -0.026)


def test_tango_with_no_discordant_pair_is_an_interval_around_zero_that_narrows_with_cases():
    small, large = tango_interval(0, 0, 30), tango_interval(0, 0, 3000)
    assert small[0] < large[0] < 0 < large[1] < small[1]
    assert small[0] == pytest.approx(-small[1])
    # Twice the design effect is half the cases.
    assert tango_interval(0, 0, 60, design_effect=2.0) == pytest.approx(tango_interval(0, 0, 30))


def test_minimum_detectable_effect_and_cases_needed_are_the_closed_form_and_its_inverse():
    z = norm.ppf(0.975) + norm.ppf(0.8)
    assert minimum_detectable_effect(0.12, 300) == pytest.approx(z * math.sqrt(0.12 / 300))
    assert minimum_detectable_effect(0.12, 300, design_effect=2.0) == pytest.approx(z * math.sqrt(0.24 / 300))
    assert cases_needed(0.12, 0.05) == math.ceil(z * z * 0.12 / 0.05 ** 2) == 377
    assert cases_needed(0.12, 0.05, design_effect=2.0) == math.ceil(z * z * 0.24 / 0.05 ** 2)
    assert minimum_detectable_effect(0.12, cases_needed(0.12, 0.05)) <= 0.05
    with pytest.raises(ValueError, match="minimum detectable effect"):
        cases_needed(0.12, 0.0)
