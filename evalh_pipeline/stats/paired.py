"""Paired statistics on two sets of verdicts on the same cases.

Each compared case contributes one difference ``d = after - before`` of its pass fraction
(0 or 1 with one sample per case; a multiple of 1/k with k samples). Two figures say how
much to believe a change in pass rate:

- McNemar's exact test: under "no real change" a case that moved is as likely to have
  moved down as up, so the count of worse cases among the moved ones is Binomial(m, 1/2).
  The two-sided p-value is twice the smaller tail (at most 1), which is what
  ``scipy.stats.binomtest(k, m, 0.5)`` and statsmodels' ``mcnemar(exact=True)`` give.
  With pass fractions it is the sign test on the per-case differences, of which McNemar's
  test is the one-sample-per-case case.
- A paired bootstrap confidence interval on the mean difference (the pass-rate delta):
  cases are resampled with replacement, keeping each case's pair together. Only the counts
  of each distinct difference matter, so a resample is drawn as one multinomial count
  vector (sequential binomials) rather than case by case: exactly the same distribution,
  at a cost independent of the number of cases. The generator is seeded, so the same
  verdicts always give the same interval.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

from evalh_pipeline.models import PairedStats
from evalh_pipeline.stats.binomial import binomial_variate
from evalh_pipeline.stats.clustering import clustered_mean
from evalh_pipeline.stats.proportions import DEFAULT_CONFIDENCE, minimum_detectable_effect, tango_interval, z_quantile

DEFAULT_ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 16
# Above this many distinct kinds of cluster the clustered interval is the normal one.
BOOTSTRAP_UNIT_LIMIT = 256
# Below this many moved cases a "noise" verdict says how few moved.
FEW_CHANGED = 10
# Up to this many moved cases the p-value is summed in exact integers; above, in logs.
_EXACT_LIMIT = 2000


def mcnemar_exact_p_value(worse: int, better: int) -> float:
    """Two-sided exact McNemar p-value for ``worse`` and ``better`` discordant pairs (1.0 with none)."""
    if worse < 0 or better < 0:
        raise ValueError("discordant counts cannot be negative")
    moved = worse + better
    low = min(worse, better)
    if moved == 0 or 2 * low == moved:
        return 1.0
    if moved <= _EXACT_LIMIT:
        tail = 0
        term = 1  # C(moved, 0)
        for i in range(low + 1):
            tail += term
            term = term * (moved - i) // (i + 1)
        return min(1.0, 2 * tail / (1 << moved))
    # log C(moved, i) - moved*log 2, summed from the largest term (i = low) downwards.
    log_half = moved * math.log(2.0)

    def log_term(i: int) -> float:
        return math.lgamma(moved + 1) - math.lgamma(i + 1) - math.lgamma(moved - i + 1) - log_half

    top = log_term(low)
    total = 0.0
    for i in range(low, -1, -1):
        ratio = math.exp(log_term(i) - top)
        total += ratio
        if ratio < 1e-17 * total:
            break
    return min(1.0, 2.0 * math.exp(top) * total)


def paired_bootstrap_ci(
    differences: Mapping[float, int],
    *,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval on the mean of the paired differences.

    ``differences`` maps each distinct difference to how many cases have it. None when no
    case was compared.
    """
    return cluster_bootstrap_ci({(float(d), 1): int(n) for d, n in differences.items()},
                                confidence=confidence, resamples=resamples, seed=seed)


def cluster_bootstrap_ci(
    clusters: Mapping[tuple[float, int], int],
    *,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval on the mean per-case difference, resampling whole clusters.

    ``clusters`` maps each distinct ``(sum of the cluster's differences, its cases)`` to how
    many clusters have it (a case on its own is a cluster of one): a resample draws clusters
    with replacement and its mean is the sum of their sums over the sum of their cases (the
    clustered bootstrap of Field & Welsh 2007). None when no case was compared.
    """
    values = sorted(((float(s), int(size)), int(n)) for (s, size), n in clusters.items() if n > 0 and size > 0)
    total = sum(n for _, n in values)
    if total == 0:
        return None
    if len(values) == 1 or len({s / size for (s, size), _ in values}) == 1:
        only = values[0][0][0] / values[0][0][1]
        return (only, only)
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        left, remaining_p, acc, cases = total, 1.0, 0.0, 0
        for (value, size), count in values[:-1]:
            p = count / total
            drawn = binomial_variate(rng, left, min(1.0, p / remaining_p)) if left else 0
            acc += value * drawn
            cases += size * drawn
            left -= drawn
            remaining_p -= p
        acc += values[-1][0][0] * left
        cases += values[-1][0][1] * left
        means.append(acc / cases)
    means.sort()
    tail = (1.0 - confidence) / 2.0
    low = means[max(0, math.floor(tail * resamples))]
    high = means[min(resamples - 1, math.ceil((1.0 - tail) * resamples) - 1)]
    return (low, high)


@dataclass(frozen=True, order=True)
class Unit:
    """A cluster of compared cases (one case on its own without ``run.cluster_by``): the sum
    and sum of squares of its cases' differences, its cases, and how many got worse / better."""

    total: float
    cases: int
    squares: float
    worse: int
    better: int


def case_unit(difference: float) -> Unit:
    """One case on its own."""
    d = float(difference)
    return Unit(d, 1, d * d, int(d < 0), int(d > 0))


def compare_paired(differences: Mapping[float, int], *, alpha: float = DEFAULT_ALPHA) -> PairedStats:
    """The paired statistics of a histogram of per-case differences (difference -> cases), as
    the DataModel's PairedStats."""
    return compare_units({case_unit(d): int(n) for d, n in differences.items()}, alpha=alpha)


def clustered_mcnemar_p_value(units: Mapping[Unit, int]) -> float:
    """Durkalski et al. 2003 ("Analysis of clustered matched-pair data", Stat. Med. 22:2417):
    McNemar's test with the variance summed over clusters, (sum of better - worse)^2 over the
    sum of their squares per cluster, against chi-square(1); 1.0 when nothing moved."""
    net = sum((u.better - u.worse) * n for u, n in units.items())
    spread = sum((u.better - u.worse) ** 2 * n for u, n in units.items())
    if spread == 0:
        return 1.0
    return min(1.0, 2.0 * NormalDist().cdf(-abs(net) / math.sqrt(spread)))


def compare_units(units: Mapping[Unit, int], *, alpha: float = DEFAULT_ALPHA) -> PairedStats:
    """The paired statistics of a histogram of clusters (unit -> how many clusters), as the
    DataModel's PairedStats: clustered figures when some unit holds several cases."""
    counts = {u: int(n) for u, n in units.items() if n > 0 and u.cases > 0}
    compared = sum(u.cases * n for u, n in counts.items())
    worse = sum(u.worse * n for u, n in counts.items())
    better = sum(u.better * n for u, n in counts.items())
    if compared == 0:
        return PairedStats(cases_compared=0, cases_worse=0, cases_better=0, pass_rate_delta=0.0, delta_ci95=None,
                           mcnemar_p_value=None, alpha=alpha, significant=False, verdict="no case to compare")
    delta = sum(u.total * n for u, n in counts.items()) / compared
    clustered = any(u.cases > 1 for u in counts)
    spread = clustered_mean({(u.total, u.cases, u.squares): n for u, n in counts.items()}) if clustered else None
    deff = max(1.0, spread.design_effect) if spread is not None else 1.0
    if clustered:
        p = clustered_mcnemar_p_value(counts)
    else:
        p = mcnemar_exact_p_value(worse, better)
    ci, method = _delta_interval(counts, compared, worse, better, deff, clustered)
    # Under "no change" the per-case difference has mean 0: its variance is the mean square
    # (the discordance rate with one sample). At least one case's worth, so that an eval
    # where nothing moved still states what it could have seen.
    discordance = sum(u.squares * n for u, n in counts.items()) / compared
    mde = min(1.0, minimum_detectable_effect(max(discordance, 1.0 / compared), compared, design_effect=deff,
                                             alpha=alpha) or 1.0)
    significant = p < alpha
    interval = [ci[0], ci[1]] if ci is not None else None
    return PairedStats(
        cases_compared=compared, cases_worse=worse, cases_better=better, pass_rate_delta=delta,
        delta_ci95=interval, mcnemar_p_value=p, alpha=alpha, significant=significant,
        verdict=verdict_text(delta, interval, p, worse, better, alpha),
        test="mcnemar_clustered" if clustered else "mcnemar_exact", delta_ci_method=method,
        discordance=discordance, mde=mde,
        clusters=spread.clusters if spread is not None else None,
        design_effect=spread.design_effect if spread is not None else None,
    )


def normal_interval(mean: float, se: float, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """``mean`` plus and minus the normal quantile times ``se``."""
    half = z_quantile(1.0 - (1.0 - confidence) / 2.0) * se
    return (mean - half, mean + half)


def _delta_interval(counts: Mapping[Unit, int], compared: int, worse: int, better: int, deff: float,
                    clustered: bool) -> tuple[tuple[float, float] | None, str]:
    """The bootstrap interval of the delta, or Tango's score interval where fewer than
    FEW_CHANGED cases moved (the bootstrap is then too narrow, and with no case moved it is
    [0, 0]) or the bootstrap collapsed to a point."""
    if worse + better >= FEW_CHANGED and clustered and len(counts) > BOOTSTRAP_UNIT_LIMIT:
        # Many kinds of cluster: a bootstrap would cost a draw per kind per resample, and with
        # that many clusters the mean is near normal (the cluster-robust standard error).
        spread = clustered_mean({(u.total, u.cases, u.squares): n for u, n in counts.items()})
        if spread is not None and spread.se_clustered > 0:
            return normal_interval(spread.mean, spread.se_clustered), "cluster_se"
    if worse + better >= FEW_CHANGED:
        ci = cluster_bootstrap_ci({(u.total, u.cases): n for u, n in counts.items()})
        if ci is not None and ci[0] < ci[1]:
            return ci, "cluster_bootstrap" if clustered else "bootstrap"
    return tango_interval(worse, better, compared, design_effect=deff), "tango"


def _pp(value: float, signed: bool = False) -> str:
    # +0.0 turns a rounded -0.0 into 0.0: "-0.0 pp" reads as a regression.
    return format(round(value * 100, 1) + 0.0, "+.1f" if signed else ".1f")


def format_p_value(p: float) -> str:
    """``p = 0.0008`` style, without exponents; ``p < 0.0001`` below that."""
    if p < 0.0001:
        return "p < 0.0001"
    text = f"{p:.2g}" if p < 0.1 else f"{p:.2f}".rstrip("0").rstrip(".")
    return f"p = {text}"


def power_line(mde: float) -> str:
    """"this eval can see drops of 9.1 points or more": the minimum detectable effect in words."""
    return f"this eval can see drops of {_pp(mde)} points or more"


def verdict_text(delta: float, ci: list[float] | None, p: float, worse: int, better: int,
                 alpha: float = DEFAULT_ALPHA) -> str:
    """"-4.0 pp, 95% CI -6.1 to -1.9, p = 0.0008: a real regression" and the like."""
    figures = f"{_pp(delta, True)} pp"
    if ci is not None:
        figures += f", 95% CI {_pp(ci[0])} to {_pp(ci[1])}"
    figures += f", {format_p_value(p)}"
    if worse == 0 and better == 0:
        return f"{figures}: no case changed"
    if p < alpha and worse > better:
        return f"{figures}: a real regression"
    if p < alpha and better > worse:
        return f"{figures}: a real improvement"
    if worse + better < FEW_CHANGED:
        # The bootstrap interval of a handful of moved cases is too narrow (it can exclude 0
        # while the exact test says p = 0.25): say why the verdict is "noise".
        return f"{figures}: not distinguishable from noise (only {worse + better} case(s) changed)"
    return f"{figures}: not distinguishable from noise"
