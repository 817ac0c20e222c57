"""Inspect's epoch reducers, for a log whose samples ran several epochs.

Inspect scores each epoch of a sample, then reduces the epochs' scores to one score per sample
with the task's ``epochs_reducer`` (``eval.config.epochs_reducer``; ``mean`` when unset) before
its metrics. The rules here are inspect_ai's (src/inspect_ai/scorer/_reducer/reducer.py) for
scalar score values: ``mean``, ``median``, ``max`` (the value with the highest float),
``mode`` (the most common value, the first met on a tie), ``at_least_<k>`` (1 when at least k
epochs score >= 1.0, else 0), ``pass_at_<k>`` (the unbiased pass@k estimate: 1 - C(n-c, k) /
C(n, k), c the epochs scoring >= 1.0), ``pass_<k>`` (C(c, k) / C(n, k)). Values are read as
floats by Inspect's default ``value_to_float`` (src/inspect_ai/scorer/_metric.py).
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from typing import Any

REDUCERS = ("mean", "median", "mode", "max", "at_least_<k>", "pass_at_<k>", "pass_<k>")
_WITH_K = re.compile(r"(at_least|pass_at|pass)_(\d+)")


def value_to_float(value: Any) -> float:
    """Inspect's default ``value_to_float``: ``C`` 1, ``P`` 0.5, ``I`` and ``N`` 0, ``yes``/``true`` 1,
    ``no``/``false`` 0, numbers and booleans as numbers, a numeric string its number; anything
    else 0 (Inspect logs a warning)."""
    if isinstance(value, (bool, int, float)):
        return float(value)
    if value == "C":
        return 1.0
    if value == "P":
        return 0.5
    if value in ("I", "N"):
        return 0.0
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in ("yes", "true"):
            return 1.0
        if lowered in ("no", "false"):
            return 0.0
        if lowered.replace(".", "").isnumeric():
            return float(lowered)
    return 0.0


def known(reducer: str) -> bool:
    """Whether ``reducer`` is one this module applies."""
    return reducer in ("mean", "median", "mode", "max") or (_WITH_K.fullmatch(reducer) is not None)


def reduce_values(reducer: str, values: list[Any]) -> Any:
    """The reduced score of one sample's epoch ``values`` (scalars, NaN ones left out as Inspect's
    ``_is_reducible`` does); NaN when none is left."""
    kept = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    if not kept:
        return float("nan")
    floats = [value_to_float(v) for v in kept]
    if reducer == "mean":
        return statistics.mean(floats)
    if reducer == "median":
        return statistics.median(floats)
    if reducer == "max":
        return max(kept, key=value_to_float)
    if reducer == "mode":
        return Counter(kept).most_common(1)[0][0]
    found = _WITH_K.fullmatch(reducer)
    if found is None:
        raise ValueError(f"unknown epoch reducer {reducer!r} (known: {', '.join(REDUCERS)})")
    kind, k = found.group(1), int(found.group(2))
    correct = sum(1 for f in floats if f >= 1.0)
    if kind == "at_least":
        return 1 if correct >= k else 0
    total = len(floats)
    if total < k:
        return float("nan")
    if kind == "pass":
        return math.comb(correct, k) / math.comb(total, k)
    if total - correct < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(total - correct + 1, total + 1))
