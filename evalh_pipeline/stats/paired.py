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
from evalh_pipeline.models import PairedStats
from evalh_pipeline.stats.binomial import binomial_variate

DEFAULT_ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 16
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
        return min(1.0, 2 * tail / 2**moved)
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
    values = sorted((float(d), int(n)) for d, n in differences.items() if n > 0)
    total = sum(n for _, n in values)
    if total == 0:
        return None
    if len(values) == 1:
        return (values[0][0], values[0][0])
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        left, remaining_p, acc = total, 1.0, 0.0
        for value, count in values[:-1]:
            p = count / total
            drawn = binomial_variate(rng, left, min(1.0, p / remaining_p)) if left else 0
            acc += value * drawn
            left -= drawn
            remaining_p -= p
        acc += values[-1][0] * left
        means.append(acc / total)
    means.sort()
    tail = (1.0 - confidence) / 2.0
    low = means[max(0, math.floor(tail * resamples))]
    high = means[min(resamples - 1, math.ceil((1.0 - tail) * resamples) - 1)]
    return (low, high)


def compare_paired(differences: Mapping[float, int], *, alpha: float = DEFAULT_ALPHA) -> PairedStats:
    """The paired statistics of a histogram of per-case differences (difference -> cases), as
    the DataModel's PairedStats."""
    counts = {float(d): int(n) for d, n in differences.items() if n > 0}
    compared = sum(counts.values())
    worse = sum(n for d, n in counts.items() if d < 0)
    better = sum(n for d, n in counts.items() if d > 0)
    if compared == 0:
        return PairedStats(cases_compared=0, cases_worse=0, cases_better=0, pass_rate_delta=0.0, delta_ci95=None,
                           mcnemar_p_value=None, alpha=alpha, significant=False, verdict="no case to compare")
    delta = sum(d * n for d, n in counts.items()) / compared
    ci = paired_bootstrap_ci(counts)
    p = mcnemar_exact_p_value(worse, better)
    significant = p < alpha
    interval = [ci[0], ci[1]] if ci is not None else None
    return PairedStats(
        cases_compared=compared, cases_worse=worse, cases_better=better, pass_rate_delta=delta,
        delta_ci95=interval, mcnemar_p_value=p, alpha=alpha, significant=significant,
        verdict=verdict_text(delta, interval, p, worse, better, alpha),
    )


def _pp(value: float, signed: bool = False) -> str:
    # +0.0 turns a rounded -0.0 into 0.0: "-0.0 pp" reads as a regression.
    return format(round(value * 100, 1) + 0.0, "+.1f" if signed else ".1f")


def format_p_value(p: float) -> str:
    """``p = 0.0008`` style, without exponents; ``p < 0.0001`` below that."""
    if p < 0.0001:
        return "p < 0.0001"
    text = f"{p:.2g}" if p < 0.1 else f"{p:.2f}".rstrip("0").rstrip(".")
    return f"p = {text}"


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
