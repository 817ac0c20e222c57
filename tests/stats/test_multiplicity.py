"""Holm and Benjamini-Hochberg adjusted p-values, against statsmodels' multipletests."""

from __future__ import annotations

import random

import pytest
from statsmodels.stats.multitest import multipletests

from evalh_pipeline.stats.multiplicity import benjamini_hochberg, holm

FIXED = [0.01, 0.04, 0.03, 0.2, 0.001, 0.04, 0.9, 1.0, 0.0]


@pytest.mark.parametrize("ours, method", [(holm, "holm"), (benjamini_hochberg, "fdr_bh")])
def test_adjusted_p_values_match_multipletests(ours, method):
    rng = random.Random(36)
    families = [FIXED, [0.5], []] + [[rng.random() ** 3 for _ in range(rng.randint(2, 40))] for _ in range(20)]
    for p_values in families:
        expected = list(multipletests(p_values, method=method)[1]) if p_values else []
        assert ours(p_values) == pytest.approx(expected, abs=1e-12)
