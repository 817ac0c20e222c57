"""Wilcoxon's signed-rank test on score differences, against scipy.stats.wilcoxon."""

from __future__ import annotations

import random

import pytest
from scipy.stats import wilcoxon

from evalh_pipeline.stats.signed_rank import wilcoxon_signed_rank


def _histogram(values):
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return counts


def test_rubric_differences_with_ties_and_zeros_match_scipy_asymptotic():
    rng = random.Random(36)
    for _ in range(30):
        # Rubric 1-5 scores: many ties and zero differences.
        differences = [rng.choice([-2, -1, 0, 0, 1, 1, 2, 3]) for _ in range(rng.randint(10, 120))]
        expected = wilcoxon(differences, zero_method="wilcox", correction=False, method="asymptotic").pvalue
        assert wilcoxon_signed_rank(_histogram(differences)) == pytest.approx(expected, rel=1e-9)


def test_untied_similarity_differences_match_scipy_exact():
    rng = random.Random(7)
    for n in (1, 5, 12, 30, 50):
        differences = [round(rng.uniform(-0.4, 0.5), 6) for _ in range(n)]
        expected = wilcoxon(differences, method="exact").pvalue
        assert wilcoxon_signed_rank(_histogram(differences)) == pytest.approx(expected, rel=1e-12)


def test_no_nonzero_difference_has_no_p_value():
    assert wilcoxon_signed_rank({0.0: 20}) is None
