"""pass@k and pass^k against the numerically stable form of the Codex paper's estimator
(``1 - prod(1 - k / arange(n - c + 1, n + 1))``, evaluated with numpy) and exact binomial
coefficients, hardcoded."""

import pytest

from evalh_pipeline.stats.repeats import pass_at_k, pass_hat_k, repeat_figures, reported_ks

REFERENCE = [
    # (n, c, k): (pass@k, pass^k)
    ((10, 3, 1), (0.3, 0.3)),
    ((10, 3, 5), (0.9166666666666666, 0.0)),
    ((200, 10, 10), (0.40854786608141724, 4.4541437266507297e-17)),
    ((5, 0, 1), (0.0, 0.0)),
    ((5, 5, 5), (1.0, 1.0)),
    ((20, 7, 4), (0.8524251805985552, 0.007223942208462332)),
]


@pytest.mark.parametrize(("nck", "expected"), REFERENCE)
def test_estimators_match_reference(nck, expected):
    assert pass_at_k(*nck) == pytest.approx(expected[0], rel=1e-12)
    assert pass_hat_k(*nck) == pytest.approx(expected[1], rel=1e-12, abs=1e-30)


def test_one_sample_is_the_plain_pass_rate():
    assert pass_at_k(1, 1, 1) == pass_hat_k(1, 1, 1) == 1.0
    assert pass_at_k(1, 0, 1) == pass_hat_k(1, 0, 1) == 0.0


def test_k_must_not_exceed_samples():
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_reported_ks():
    assert reported_ks(1) == [1]
    assert reported_ks(5) == [1, 2, 4, 5]
    assert reported_ks(8) == [1, 2, 4, 8]


def test_repeat_figures_lists_flaky_cases_and_fractions():
    figures = repeat_figures([("a", 3, 3), ("b", 3, 1), ("c", 3, 0), ("d", 3, 2), ("e", 2, 1)], 3)
    assert figures.flaky_cases == ["b", "d", "e"]
    assert figures.case_pass_fractions == {"3/3": 1, "2/3": 1, "1/2": 1, "1/3": 1, "0/3": 1}
    assert figures.pass_at_k[1] == pytest.approx((1 + 1 / 3 + 0 + 2 / 3 + 1 / 2) / 5)
    # k = 3 is reported over the four cases with three samples.
    assert figures.pass_at_k[3] == pytest.approx((1 + 1 + 0 + 1) / 4)
    assert figures.pass_hat_k[3] == pytest.approx(1 / 4)
