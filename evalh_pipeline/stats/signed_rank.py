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


def _exact_p(r_plus: float, n: int) -> float:
    # counts[s]: how many of the 2**n sign assignments give a positive rank sum of s.
    total = n * (n + 1) // 2
    counts = [1] + [0] * total
    for rank in range(1, n + 1):
        for s in range(total, rank - 1, -1):
            counts[s] += counts[s - rank]
    low = min(r_plus, total - r_plus)
    tail = sum(counts[: math.floor(low) + 1])
    return min(1.0, 2.0 * tail / (1 << n))


def wilcoxon_signed_rank(differences: Mapping[float, int]) -> float | None:
    """Two-sided p-value of the signed-rank test on a histogram of per-case differences
    (difference -> cases); None when no case has a non-zero difference."""
    # |d| -> (cases with d > 0, cases with d < 0): ranks are given per distinct |d|, ties
    # sharing the mean of their positions.
    by_size: dict[float, list[int]] = {}
    for d, count in differences.items():
        if d != 0 and count > 0:
            signs = by_size.setdefault(abs(float(d)), [0, 0])
            signs[0 if d > 0 else 1] += int(count)
    n = sum(up + down for up, down in by_size.values())
    if n == 0:
        return None
    r_plus, ties, position = 0.0, 0.0, 0
    for size in sorted(by_size):
        up, down = by_size[size]
        t = up + down
        r_plus += up * (position + (t + 1) / 2.0)
        ties += t ** 3 - t
        position += t
    return signed_rank_p_value(n, r_plus, ties)


def signed_rank_p_value(n: int, r_plus: float, ties: float) -> float | None:
    """The two-sided p-value from ``n`` non-zero differences, the rank sum of the positive ones
    and the tie term sum(t³ - t) over groups of tied sizes (None when ``n`` is 0)."""
    if n == 0:
        return None
    if not ties and n <= EXACT_LIMIT:
        return _exact_p(r_plus, n)
    mean = n * (n + 1) / 4.0
    variance = n * (n + 1) * (2 * n + 1) / 24.0 - ties / 48.0
    if variance <= 0:
        return 1.0
    z = (r_plus - mean) / math.sqrt(variance)
    return min(1.0, 2.0 * NormalDist().cdf(-abs(z)))
