"""Adjusted p-values for a family of tests.

- Holm's step-down method (Holm 1979, "A simple sequentially rejective multiple test
  procedure") controls the family-wise error rate: the chance that any test of the family
  rejects wrongly. For a gate, which fails when any of its tests rejects.
- Benjamini & Hochberg's step-up method (1995, "Controlling the false discovery rate")
  controls the expected share of wrong rejections among the rejections. For tables of many
  tests read one by one (every variant x evaluator).

Both give the adjusted p-values statsmodels' ``multipletests(method="holm" / "fdr_bh")``
gives: a test rejects at level alpha when its adjusted p-value is below alpha.
"""

from __future__ import annotations

from collections.abc import Sequence


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg-adjusted p-values (false discovery rate), in the order given."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i], reverse=True)
    adjusted = [0.0] * m
    running = 1.0
    for position, i in enumerate(order):
        rank = m - position
        running = min(running, m / rank * p_values[i])
        adjusted[i] = min(1.0, running)
    return adjusted
