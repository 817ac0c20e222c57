"""Wilcoxon's signed-rank test on paired scores (rubric 1-5, similarity), as
``scipy.stats.wilcoxon(d, zero_method="wilcox", correction=False)`` computes it.

Zero differences are dropped (Wilcoxon's treatment); the absolute differences are ranked with
average ranks for ties. Without ties and with at most 50 differences the p-value comes from
the exact null distribution of the positive rank sum (``method="exact"``); otherwise from the
normal approximation with the tie correction of the variance (``method="asymptotic"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist

EXACT_LIMIT = 50


def _ranks(values: list[float]) -> list[float]:
    """Average ranks (1-based) of ``values``, ties sharing the mean of their positions."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2.0 + 1.0
        start = end + 1
    return ranks


def _exact_p(r_plus: float, n: int) -> float:
    # counts[s]: how many of the 2**n sign assignments give a positive rank sum of s.
    total = n * (n + 1) // 2
    counts = [1] + [0] * total
    for rank in range(1, n + 1):
        for s in range(total, rank - 1, -1):
            counts[s] += counts[s - rank]
    low = min(r_plus, total - r_plus)
    tail = sum(counts[: math.floor(low) + 1])
    return min(1.0, 2.0 * tail / 2 ** n)


def wilcoxon_signed_rank(differences: Mapping[float, int]) -> float | None:
    """Two-sided p-value of the signed-rank test on a histogram of per-case differences
    (difference -> cases); None when no case has a non-zero difference."""
    values = [float(d) for d, count in differences.items() for _ in range(int(count)) if d != 0]
    n = len(values)
    if n == 0:
        return None
    ranks = _ranks([abs(v) for v in values])
    r_plus = sum(r for r, v in zip(ranks, values) if v > 0)
    tied = len(set(abs(v) for v in values)) < n
    if not tied and n <= EXACT_LIMIT:
        return _exact_p(r_plus, n)
    mean = n * (n + 1) / 4.0
    variance = n * (n + 1) * (2 * n + 1) / 24.0
    groups: dict[float, int] = {}
    for v in values:
        groups[abs(v)] = groups.get(abs(v), 0) + 1
    variance -= sum(t ** 3 - t for t in groups.values()) / 48.0
    if variance <= 0:
        return 1.0
    z = (r_plus - mean) / math.sqrt(variance)
    return min(1.0, 2.0 * NormalDist().cdf(-abs(z)))
