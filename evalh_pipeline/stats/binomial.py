"""Binomial random variates for the paired bootstrap (Python 3.11 has no random.binomialvariate).

Small means use Devroye's geometric waiting-time method; larger ones Hörmann's BTRS
("The generation of binomial random variates", J. Statist. Comput. Simul. 46, 1993),
a transformed-rejection sampler whose cost does not grow with ``n``.
"""

from __future__ import annotations

import math
import random


def binomial_variate(rng: random.Random, n: int, p: float) -> int:
    """One draw of Binomial(n, p) from ``rng``."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    if p > 0.5:
        return n - binomial_variate(rng, n, 1.0 - p)
    if n * p < 10.0:
        return _waiting_time(rng, n, p)
    return _btrs(rng, n, p)


def _waiting_time(rng: random.Random, n: int, p: float) -> int:
    # Successes are counted by jumping over geometric gaps between them.
    log_q = math.log(1.0 - p)
    successes = position = 0
    while True:
        position += math.floor(math.log(1.0 - rng.random()) / log_q) + 1
        if position > n:
            return successes
        successes += 1


def _btrs(rng: random.Random, n: int, p: float) -> int:
    spq = math.sqrt(n * p * (1.0 - p))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = math.log(p / (1.0 - p))
    mode = math.floor((n + 1) * p)
    h = math.lgamma(mode + 1) + math.lgamma(n - mode + 1)
    while True:
        u = rng.random() - 0.5
        v = rng.random()
        us = 0.5 - abs(u)
        if us <= 0.0:
            continue  # u was exactly -0.5: the transform below would divide by zero
        k = math.floor((2.0 * a / us + b) * u + c)
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return k  # the squeeze: accepted without evaluating the density
        v = v * alpha / (a / (us * us) + b)
        if math.log(v) <= h - math.lgamma(k + 1) - math.lgamma(n - k + 1) + (k - mode) * lpq:
            return k
