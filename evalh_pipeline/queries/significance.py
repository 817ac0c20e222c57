"""Paired statistics over DuckDB tables of per-case pass fractions.

The queries return one row per (group, difference) with the number of cases that have that
difference; :func:`paired_by_group` turns them into one
:class:`~evalh_pipeline.models.PairedStats` per group. Differences are rounded
so that equal fractions (k/n) group together despite floating-point noise.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalh_pipeline.models import PairedStats
from evalh_pipeline.stats.paired import DEFAULT_ALPHA, compare_paired

# Rounded so 2/3 - 1/3 and 1/3 group together.
DIFFERENCE = "round({after}.fraction - {before}.fraction, 9)"


def paired_by_group(rows: Iterable[tuple[Any, ...]], *, alpha: float = DEFAULT_ALPHA) -> dict[Any, PairedStats]:
    """``(group..., difference, cases)`` rows -> group -> PairedStats.

    The group is the leading columns (one column: its value; several: a tuple).
    """
    histograms: dict[Any, dict[float, int]] = {}
    for row in rows:
        *group, difference, cases = row
        key = group[0] if len(group) == 1 else tuple(group)
        bucket = histograms.setdefault(key, {})
        bucket[float(difference)] = bucket.get(float(difference), 0) + int(cases)
    return {key: compare_paired(hist, alpha=alpha) for key, hist in histograms.items()}
