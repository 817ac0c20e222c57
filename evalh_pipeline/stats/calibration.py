"""How far a judge agrees with human labels, and a pass rate corrected for the judge's error.

- Agreement, Cohen's kappa (Cohen 1960, "A coefficient of agreement for nominal scales"; what
  statsmodels' ``inter_rater.cohens_kappa`` gives), and the judge's sensitivity (it passes
  what a human passed) and specificity (it fails what a human failed), each with Wilson's
  interval.
- The Rogan-Gladen estimator of the true pass rate from the judge's observed rate ``p``
  (Rogan & Gladen 1978; for LLM judges Lee et al. 2025, "How to correctly report
  LLM-as-a-judge evaluations", arXiv 2511.21140): ``theta = (p + spec - 1) / (sens + spec - 1)``.
  Its interval is the delta method over the three independent proportions (the test set's
  ``p`` on ``n`` cells, ``sens`` on the ``m1`` human passes, ``spec`` on the ``m0`` human
  failures), so the labelled set's uncertainty widens it:
  ``var = [p(1-p)/n + theta^2 sens(1-sens)/m1 + (1-theta)^2 spec(1-spec)/m0] / (sens+spec-1)^2``.
  As Lee et al. do, the interval is computed on the proportions adjusted by z^2/2 successes
  and failures each (Agresti-Coull), which keeps its coverage near nominal with small
  labelled sets and a judge close to perfect; estimate and bounds are clipped to [0, 1].
- The corrected difference of two variants judged on the same cases: the correction is
  linear, so ``delta_theta = delta_p / (sens + spec - 1)`` when the judge errs alike on both
  (non-differential error: the same judge and config, labels pooled over both). Its interval
  is the delta method over the paired difference ``delta_p`` (its variance from the
  discordant pairs, as McNemar's: ``[p10 + p01 - (p10 - p01)^2] / n``) and the judge's
  ``J = sens + spec - 1``: ``var = var(delta_p) / J^2 + delta_theta^2 var(J) / J^2`` with
  ``var(J) = sens(1-sens)/m1 + spec(1-spec)/m0``, on the same Agresti-Coull-adjusted
  proportions; bounds clipped to [-1, 1].
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from evalh_pipeline.stats.proportions import DEFAULT_CONFIDENCE, wilson_interval, z_quantile

# Below this many labels of either human verdict the judge's sensitivity or specificity is
# too uncertain to correct a rate with: the summary says so instead.
MIN_LABELS_PER_VERDICT = 5
CORRECTION_METHOD = "rogan_gladen_delta"


@dataclass(frozen=True)
class ConfusionCounts:
    """Human verdict x judge verdict over labelled cells (``tp``: both passed)."""

    tp: int = 0
    fn: int = 0  # a human passed, the judge failed
    fp: int = 0  # a human failed, the judge passed
    tn: int = 0

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]]) -> "ConfusionCounts":
        """Count (human, judge) verdict pairs."""
        tp = fn = fp = tn = 0
        for human, judge in pairs:
            if human and judge:
                tp += 1
            elif human:
                fn += 1
            elif judge:
                fp += 1
            else:
                tn += 1
        return cls(tp=tp, fn=fn, fp=fp, tn=tn)

    @property
    def total(self) -> int:
        """Labelled cells."""
        return self.tp + self.fn + self.fp + self.tn

    @property
    def human_passed(self) -> int:
        """Labelled cells a human passed (the denominator of the sensitivity)."""
        return self.tp + self.fn

    @property
    def human_failed(self) -> int:
        """Labelled cells a human failed (the denominator of the specificity)."""
        return self.fp + self.tn


def agreement(c: ConfusionCounts) -> float | None:
    """The share of labelled cells where judge and human agree."""
    return (c.tp + c.tn) / c.total if c.total else None


def cohens_kappa(c: ConfusionCounts) -> float | None:
    """Cohen's kappa: agreement beyond what the two base rates give by chance (None when
    there are no labels; 0 when chance agreement is already 1, where kappa is undefined)."""
    n = c.total
    if not n:
        return None
    observed = (c.tp + c.tn) / n
    chance = ((c.tp + c.fn) * (c.tp + c.fp) + (c.fp + c.tn) * (c.fn + c.tn)) / (n * n)
    if chance >= 1.0:
        return 0.0
    return (observed - chance) / (1.0 - chance)


@dataclass(frozen=True)
class Rate:
    """A proportion, its counts and its Wilson interval."""

    estimate: float
    successes: int
    n: int
    ci_low: float
    ci_high: float


def rate(successes: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> Rate | None:
    """``successes / n`` with Wilson's interval (None when ``n`` is 0)."""
    interval = wilson_interval(successes, n, confidence=confidence)
    if interval is None:
        return None
    return Rate(successes / n, successes, n, interval[0], interval[1])


def sensitivity(c: ConfusionCounts) -> Rate | None:
    """The judge's pass rate on cells a human passed."""
    return rate(c.tp, c.human_passed)


def specificity(c: ConfusionCounts) -> Rate | None:
    """The judge's fail rate on cells a human failed."""
    return rate(c.tn, c.human_failed)


@dataclass(frozen=True)
class CorrectedRate:
    """A pass rate corrected for the judge's error, with its interval."""

    estimate: float
    ci_low: float
    ci_high: float
    method: str = CORRECTION_METHOD


def correction_refusal(c: ConfusionCounts) -> str | None:
    """Why the labels cannot correct a rate (None: they can)."""
    if c.human_passed < MIN_LABELS_PER_VERDICT or c.human_failed < MIN_LABELS_PER_VERDICT:
        return (f"too few labels to correct: {c.human_passed} human passes and {c.human_failed} human "
                f"failures (need {MIN_LABELS_PER_VERDICT} of each)")
    if c.tp / c.human_passed + c.tn / c.human_failed <= 1.0:
        return "judge no better than chance on the labels (sensitivity + specificity <= 1): not corrected"
    return None


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def rogan_gladen(passed: int, n: int, c: ConfusionCounts,
                 confidence: float = DEFAULT_CONFIDENCE) -> CorrectedRate | None:
    """The true pass rate behind ``passed / n`` judged by a judge with the labels ``c``
    (None when ``n`` is 0 or :func:`correction_refusal` refuses)."""
    if n <= 0 or correction_refusal(c) is not None:
        return None
    sens, spec = c.tp / c.human_passed, c.tn / c.human_failed
    estimate = _clip((passed / n + spec - 1.0) / (sens + spec - 1.0))
    z = z_quantile(1.0 - (1.0 - confidence) / 2.0)
    add = z * z / 2.0
    n_, m1, m0 = n + 2 * add, c.human_passed + 2 * add, c.human_failed + 2 * add
    p_, sens_, spec_ = (passed + add) / n_, (c.tp + add) / m1, (c.tn + add) / m0
    youden = sens_ + spec_ - 1.0
    if youden <= 0:
        return None
    theta = (p_ + spec_ - 1.0) / youden
    variance = (p_ * (1 - p_) / n_ + theta ** 2 * sens_ * (1 - sens_) / m1
                + (1 - theta) ** 2 * spec_ * (1 - spec_) / m0) / youden ** 2
    half = z * math.sqrt(variance)
    return CorrectedRate(estimate, _clip(theta - half), _clip(theta + half))


def corrected_paired_delta(pairs: Iterable[tuple[bool, bool]], c: ConfusionCounts,
                           confidence: float = DEFAULT_CONFIDENCE) -> CorrectedRate | None:
    """The true difference in pass rate (second minus first) behind the judge's verdicts on
    ``pairs`` (first variant's verdict, second's, per case), corrected with the labels ``c``
    (None with no pair or when :func:`correction_refusal` refuses)."""
    p10 = p01 = n = 0
    for first, second in pairs:
        n += 1
        p10 += first and not second
        p01 += second and not first
    if n == 0 or correction_refusal(c) is not None:
        return None
    sens, spec = c.tp / c.human_passed, c.tn / c.human_failed
    estimate = max(-1.0, min(1.0, (p01 - p10) / n / (sens + spec - 1.0)))
    z = z_quantile(1.0 - (1.0 - confidence) / 2.0)
    add = z * z / 2.0
    m1, m0 = c.human_passed + 2 * add, c.human_failed + 2 * add
    sens_, spec_ = (c.tp + add) / m1, (c.tn + add) / m0
    youden = sens_ + spec_ - 1.0
    if youden <= 0:
        return None
    d10, d01 = p10 / n, p01 / n
    delta_p = d01 - d10
    theta = delta_p / youden
    var_delta_p = max(d10 + d01 - delta_p ** 2, 0.0) / n
    var_j = sens_ * (1 - sens_) / m1 + spec_ * (1 - spec_) / m0
    half = z * math.sqrt(var_delta_p / youden ** 2 + theta ** 2 * var_j / youden ** 2)
    return CorrectedRate(estimate, max(-1.0, theta - half), min(1.0, theta + half), method="rogan_gladen_paired_delta")
