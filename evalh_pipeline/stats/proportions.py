"""Intervals on proportions and paired proportions, and the power of a paired comparison.

- Wilson's score interval on a pass rate (Wilson 1927, "Probable inference, the law of
  succession, and statistical inference"; what statsmodels' ``proportion_confint(method=
  "wilson")`` gives). With clustered cases the counts are first divided by the design effect
  (Rao & Scott 1992, "A simple method for the analysis of clustered binary data"): the same
  interval on the effective sample size.
- Tango's score interval on the difference of two paired proportions (Tango 1998,
  "Equivalence test and confidence interval for the difference in proportions for the paired-
  sample design", Stat. Med. 17:891-908): it needs only the discordant counts, and with no
  discordant pair it is still an interval around 0 whose width shrinks with the number of
  cases, never [0, 0]. Fagerland, Lydersen & Laake (2013) recommend it for paired
  proportions.
- The minimum detectable effect of a paired comparison at a given power, and its inverse,
  the cases an eval needs (Connor 1987, "Sample size for testing differences in proportions
  for the paired-sample design", without the second-order term):
  ``n = (z_{1-alpha/2} + z_{power})**2 * psi * deff / mde**2`` with ``psi`` the variance of
  the per-case difference under no change (for pass/fail: the discordance rate, the share of
  cases that moved) and ``deff`` the design effect of clustered cases.
"""

from __future__ import annotations

import math
from statistics import NormalDist

DEFAULT_CONFIDENCE = 0.95
DEFAULT_POWER = 0.80


def z_quantile(p: float) -> float:
    """The standard normal quantile at ``p``."""
    return NormalDist().inv_cdf(p)


def wilson_interval(successes: float, n: float, *, confidence: float = DEFAULT_CONFIDENCE,
                    design_effect: float = 1.0) -> tuple[float, float] | None:
    """Wilson's score interval on ``successes / n`` (None when ``n`` is 0).

    ``design_effect`` > 1 (clustered cases) divides both counts by it first (Rao-Scott)."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n (successes={successes}, n={n})")
    deff = max(1.0, design_effect)
    n_eff = n / deff
    p = successes / n
    z = z_quantile(1.0 - (1.0 - confidence) / 2.0)
    z2 = z * z
    centre = (p + z2 / (2.0 * n_eff)) / (1.0 + z2 / n_eff)
    half = z / (1.0 + z2 / n_eff) * math.sqrt(p * (1.0 - p) / n_eff + z2 / (4.0 * n_eff * n_eff))
    return (max(0.0, centre - half), min(1.0, centre + half))


def _tango_z(delta: float, better: float, worse: float, n: float) -> float:
    """Tango's score statistic for H0: (better - worse) / n == delta.

    The variance is taken at the constrained maximum-likelihood estimate of the share of
    cases that got worse (the root of a quadratic, Tango 1998 eq. 3)."""
    w = -better - worse + (2.0 * n - better + worse) * delta
    q_worse = (math.sqrt(max(0.0, w * w + 8.0 * n * worse * delta * (1.0 - delta))) - w) / (4.0 * n)
    variance = n * (2.0 * q_worse + delta * (1.0 - delta))
    numerator = better - worse - n * delta
    if variance <= 0.0:
        return math.inf if numerator > 0 else -math.inf if numerator < 0 else 0.0
    return numerator / math.sqrt(variance)


def tango_interval(worse: float, better: float, n: float, *, confidence: float = DEFAULT_CONFIDENCE,
                   design_effect: float = 1.0) -> tuple[float, float] | None:
    """Tango's score interval on ``(better - worse) / n``, the paired pass-rate delta (None when ``n`` is 0).

    ``design_effect`` > 1 divides the counts by it first (Rao-Scott)."""
    if n <= 0:
        return None
    if worse < 0 or better < 0 or worse + better > n:
        raise ValueError(f"need 0 <= worse + better <= n (worse={worse}, better={better}, n={n})")
    deff = max(1.0, design_effect)
    worse, better, n = worse / deff, better / deff, n / deff
    z = z_quantile(1.0 - (1.0 - confidence) / 2.0)
    estimate = (better - worse) / n

    def root(low: float, high: float, target: float) -> float:
        # The statistic decreases in delta: bisect for where it crosses ``target``.
        for _ in range(100):
            middle = (low + high) / 2.0
            if _tango_z(middle, better, worse, n) > target:
                low = middle
            else:
                high = middle
        return (low + high) / 2.0

    low = -1.0 if _tango_z(-1.0, better, worse, n) <= z else root(-1.0, estimate, z)
    high = 1.0 if _tango_z(1.0, better, worse, n) >= -z else root(estimate, 1.0, -z)
    return (low, high)


def _z_sum(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"need 0 < alpha < 1 and 0 < power < 1 (alpha={alpha}, power={power})")
    return z_quantile(1.0 - alpha / 2.0) + z_quantile(power)


def minimum_detectable_effect(variance: float, n: float, *, design_effect: float = 1.0,
                              alpha: float = 0.05, power: float = DEFAULT_POWER) -> float | None:
    """The smallest pass-rate change a two-sided paired test at ``alpha`` detects with ``power``,
    from the per-case ``variance`` of the difference (None with no case)."""
    if n <= 0:
        return None
    return _z_sum(alpha, power) * math.sqrt(max(0.0, variance) * max(1.0, design_effect) / n)


def cases_needed(variance: float, mde: float, *, design_effect: float = 1.0, alpha: float = 0.05,
                 power: float = DEFAULT_POWER) -> int:
    """Cases a paired comparison needs to detect a change of ``mde`` (the inverse of
    :func:`minimum_detectable_effect`, rounded up)."""
    if not 0 < mde <= 1:
        raise ValueError(f"the minimum detectable effect must be in (0, 1], got {mde}")
    return max(1, math.ceil(_z_sum(alpha, power) ** 2 * max(0.0, variance) * max(1.0, design_effect) / mde ** 2))
