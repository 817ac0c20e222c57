"""The mean of per-case values when cases come in clusters (several questions per document or
template), and how much the clustering widens its uncertainty.

Cases of one cluster are not independent: the standard error of their mean is the
cluster-robust ("sandwich") one, which sums the residuals within each cluster before
squaring them (Liang & Zeger 1986; Miller 2024, "Adding error bars to evals", arXiv
2411.00640, eq. 4), with the small-sample factor G/(G-1) of G clusters: what statsmodels'
``OLS(y, ones).fit(cov_type="cluster")`` gives. The design effect is the ratio of that
variance to the naive one (Kish 1965): an eval of N clustered cases is worth N / deff
independent ones. It is never taken below 1 where it widens an interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ClusteredMean:
    """The mean of the cases' values, its naive and cluster-robust standard errors and the
    design effect (their squared ratio; 1.0 when the naive one is 0)."""

    mean: float
    cases: int
    clusters: int
    se_naive: float
    se_clustered: float
    design_effect: float


def clustered_mean(clusters: Iterable[tuple[float, int, float]]) -> ClusteredMean | None:
    """From ``(sum, cases, sum of squares)`` of each cluster's values; None with fewer than
    two clusters (no cluster-robust variance) or two cases."""
    units = [(float(s), int(n), float(q)) for s, n, q in clusters if n > 0]
    g = len(units)
    total = sum(n for _, n, _ in units)
    if g < 2 or total < 2:
        return None
    mean = sum(s for s, _, _ in units) / total
    squares = sum(q for _, _, q in units) - total * mean * mean
    var_naive = max(0.0, squares) / (total - 1) / total
    var_clustered = g / (g - 1) * sum((s - n * mean) ** 2 for s, n, _ in units) / total ** 2
    deff = var_clustered / var_naive if var_naive > 0 else 1.0
    return ClusteredMean(mean=mean, cases=total, clusters=g, se_naive=math.sqrt(var_naive),
                         se_clustered=math.sqrt(var_clustered), design_effect=deff)
