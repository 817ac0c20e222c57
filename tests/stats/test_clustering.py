"""Clustered cases: the cluster-robust standard error and design effect against statsmodels,
the clustered McNemar test, and the coverage of the clustered bootstrap interval when the
cases of a cluster are correlated."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.stats.contingency_tables import mcnemar

from evalh_pipeline.stats.clustering import clustered_mean
from evalh_pipeline.stats.paired import Unit, cluster_bootstrap_ci, clustered_mcnemar_p_value, compare_units


def _clusters(values: np.ndarray, groups: np.ndarray) -> list[tuple[float, int, float]]:
    return [(float(values[groups == g].sum()), int((groups == g).sum()), float((values[groups == g] ** 2).sum()))
            for g in np.unique(groups)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_clustered_standard_error_matches_statsmodels_ols_with_cluster_covariance(seed):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 17, size=240)
    values = (rng.random(240) < 0.2 + 0.5 * (groups % 3 == 0)).astype(float) - (rng.random(240) < 0.1)
    ones = np.ones((240, 1))
    robust = sm.OLS(values, ones).fit(cov_type="cluster", cov_kwds={"groups": groups})
    naive = sm.OLS(values, ones).fit()
    ours = clustered_mean(_clusters(values, groups))
    assert ours.mean == pytest.approx(robust.params[0])
    assert ours.se_clustered == pytest.approx(robust.bse[0], rel=1e-10)
    assert ours.se_naive == pytest.approx(naive.bse[0], rel=1e-10)
    assert ours.design_effect == pytest.approx((robust.bse[0] / naive.bse[0]) ** 2)
    assert ours.clusters == len(np.unique(groups)) and ours.cases == 240


def test_clustered_mcnemar_of_single_cases_is_the_asymptotic_mcnemar_test():
    units = {Unit(-1.0, 1, 1.0, 1, 0): 14, Unit(1.0, 1, 1.0, 0, 1): 5, Unit(0.0, 1, 0.0, 0, 0): 80}
    expected = mcnemar([[80, 14], [5, 0]], exact=False, correction=False).pvalue
    assert clustered_mcnemar_p_value(units) == pytest.approx(expected, rel=1e-12)


def test_clustered_comparison_reports_clusters_and_a_design_effect_above_one():
    # 20 documents of 5 questions; whole documents moved together.
    units = {Unit(-5.0, 5, 5.0, 5, 0): 4, Unit(5.0, 5, 5.0, 0, 5): 1, Unit(0.0, 5, 0.0, 0, 0): 15}
    stats = compare_units(units)
    assert stats.clusters == 20 and stats.design_effect > 4
    assert stats.test == "mcnemar_clustered" and stats.delta_ci_method == "cluster_bootstrap"
    naive = compare_units({Unit(-1.0, 1, 1.0, 1, 0): 20, Unit(1.0, 1, 1.0, 0, 1): 5, Unit(0.0, 1, 0.0, 0, 0): 75})
    assert stats.pass_rate_delta == naive.pass_rate_delta
    assert stats.mcnemar_p_value > naive.mcnemar_p_value and stats.mde > naive.mde
    width = stats.delta_ci95[1] - stats.delta_ci95[0]
    assert width > 1.5 * (naive.delta_ci95[1] - naive.delta_ci95[0])


def test_clustered_bootstrap_covers_the_true_delta_with_correlated_cases():
    """500 simulated evals of 100 clusters x 4 cases whose chance of getting worse is shared
    within a cluster (beta-distributed, intra-cluster correlation 0.3, mean 0.3): the clustered
    interval covers the true delta -0.3 in at least 93% of them at 95%; the case-level
    bootstrap, blind to the clusters, does not."""
    rng = np.random.default_rng(36)
    runs, clusters, size, icc, mean = 500, 100, 4, 0.3, 0.3
    spread = 1 / icc - 1
    worse = rng.binomial(size, rng.beta(mean * spread, (1 - mean) * spread, size=(runs, clusters)))
    covered = naive_covered = 0
    for run in range(runs):
        sums, counts = np.unique(-worse[run], return_counts=True)
        low, high = cluster_bootstrap_ci({(float(s), size): int(c) for s, c in zip(sums, counts)},
                                         resamples=1000, seed=run)
        covered += low <= -mean <= high
        moved = int(worse[run].sum())
        low, high = cluster_bootstrap_ci({(-1.0, 1): moved, (0.0, 1): clusters * size - moved},
                                         resamples=1000, seed=run)
        naive_covered += low <= -mean <= high
    assert covered / runs >= 0.93
    assert naive_covered / runs < 0.9


def test_many_kinds_of_cluster_use_the_cluster_robust_normal_interval():
    rng = np.random.default_rng(4)
    groups = np.repeat(np.arange(600), rng.integers(5, 60, size=600))
    values = -(rng.random(groups.size) < 0.3).astype(float) + (rng.random(groups.size) < 0.1)
    units: dict[Unit, int] = {}
    for g in np.unique(groups):
        v = values[groups == g]
        unit = Unit(float(v.sum()), int(v.size), float((v ** 2).sum()), int((v < 0).sum()), int((v > 0).sum()))
        units[unit] = units.get(unit, 0) + 1
    stats = compare_units(units)
    assert len(units) > 256 and stats.delta_ci_method == "cluster_se"
    fit = sm.OLS(values, np.ones((values.size, 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert stats.delta_ci95 == pytest.approx(list(fit.conf_int(alpha=0.05)[0]), rel=1e-9)
