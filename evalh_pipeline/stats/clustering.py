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
from collections.abc import Iterable, Mapping
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


def clustered_mean(clusters: Iterable[tuple[float, int, float]] | Mapping[tuple[float, int, float], int],
                   ) -> ClusteredMean | None:
    """From ``(sum, cases, sum of squares)`` of each cluster's values (or a histogram of them:
    how many clusters have each); None with fewer than two clusters (no cluster-robust
    variance) or two cases."""
    counted = clusters.items() if isinstance(clusters, Mapping) else ((unit, 1) for unit in clusters)
    units = [(float(s), int(n), float(q), int(k)) for (s, n, q), k in counted if n > 0 and k > 0]
    g = sum(k for *_, k in units)
    total = sum(n * k for _, n, _, k in units)
    if g < 2 or total < 2:
        return None
    mean = sum(s * k for s, _, _, k in units) / total
    squares = sum(q * k for _, _, q, k in units) - total * mean * mean
    var_naive = max(0.0, squares) / (total - 1) / total
    var_clustered = g / (g - 1) * sum((s - n * mean) ** 2 * k for s, n, _, k in units) / total ** 2
    deff = var_clustered / var_naive if var_naive > 0 else 1.0
    return ClusteredMean(mean=mean, cases=total, clusters=g, se_naive=math.sqrt(var_naive),
                         se_clustered=math.sqrt(var_clustered), design_effect=deff)
