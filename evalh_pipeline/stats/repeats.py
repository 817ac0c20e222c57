"""Estimators for runs with several samples per case (``run.samples_per_case``).

With ``n`` samples of a case of which ``c`` passed, the unbiased estimators are
(Chen et al. 2021, "Evaluating Large Language Models Trained on Code"; Yao et al. 2024,
"tau-bench"):

- pass@k = 1 - C(n-c, k) / C(n, k): the chance that at least one of k samples passes;
- pass^k = C(c, k) / C(n, k): the chance that all k samples pass (reliability).

Averaged over cases. A case is flaky when its samples disagree (0 < c < n).
"""

from __future__ import annotations

from collections.abc import Iterable
from math import comb

from evalh_pipeline.models import RepeatStats


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one case with ``c`` passing samples out of ``n`` (k <= n)."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k of one case with ``c`` passing samples out of ``n`` (k <= n)."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")


def reported_ks(samples: int) -> list[int]:
    """The k at which pass@k and pass^k are reported: 1, powers of two, and ``samples``."""
    ks = {1, samples}
    k = 2
    while k < samples:
        ks.add(k)
        k *= 2
    return sorted(ks)


def repeat_figures(cases: Iterable[tuple[str, int, int]], samples_per_case: int) -> RepeatStats:
    """Figures from ``(case_id, samples, passed)`` per case; a case with fewer samples than k
    (a resumed or limited run) counts only for the k it has."""
    ks = reported_ks(samples_per_case)
    at = {k: [0.0, 0] for k in ks}
    hat = {k: [0.0, 0] for k in ks}
    fractions: dict[str, int] = {}
    flaky: list[str] = []
    for case_id, n, c in cases:
        if n <= 0:
            continue
        key = f"{c}/{n}"
        fractions[key] = fractions.get(key, 0) + 1
        if 0 < c < n:
            flaky.append(case_id)
        for k in ks:
            if k <= n:
                at[k][0] += pass_at_k(n, c, k)
                at[k][1] += 1
                hat[k][0] += pass_hat_k(n, c, k)
                hat[k][1] += 1
    return RepeatStats(
        samples_per_case=samples_per_case,
        pass_at_k={k: s / m for k, (s, m) in at.items() if m},
        pass_hat_k={k: s / m for k, (s, m) in hat.items() if m},
        case_pass_fractions=dict(sorted(fractions.items(), key=lambda kv: _fraction_order(kv[0]), reverse=True)),
        flaky_cases=sorted(flaky),
    )


def _fraction_order(key: str) -> tuple[float, int]:
    c, n = key.split("/")
    return (int(c) / int(n), int(n))
