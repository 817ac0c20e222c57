"""Paired statistics over DuckDB tables of per-case pass fractions.

A query of per-case differences (``(group..., case_id, d)`` rows, :data:`DIFFERENCE`) is
wrapped by :func:`clustered_sql` into one row per (group, kind of cluster) with the number
of clusters of that kind: a cluster is the cases sharing a ``run.cluster_by`` value (the
``case_clusters`` table, queries/clusters.py), or one case. :func:`paired_by_group` turns
them into one :class:`~evalh_pipeline.models.PairedStats` per group. Differences are
rounded so that equal fractions (k/n) group together despite floating-point noise.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalh_pipeline.models import PairedStats
from evalh_pipeline.queries.clusters import CLUSTER_OF
from evalh_pipeline.stats.multiplicity import benjamini_hochberg
from evalh_pipeline.stats.clustering import clustered_mean
from evalh_pipeline.stats.paired import DEFAULT_ALPHA, Unit, compare_units, normal_interval
from evalh_pipeline.stats.signed_rank import wilcoxon_signed_rank

# Rounded so 2/3 - 1/3 and 1/3 group together.
DIFFERENCE = "round({after}.fraction - {before}.fraction, 9)"


def clustered_sql(pairs: str, groups: str, clusters: str | None = "case_clusters") -> str:
    """``pairs`` (a query of ``groups``, case_id and d) as rows of ``groups``, then each cluster's
    sum of d, cases, sum of d squared, cases worse and better, and how many clusters have them.
    ``clusters`` None: every case is a cluster of its own (no ``case_clusters`` table)."""
    cluster = CLUSTER_OF.format(clusters="cl", case_id="pairs.case_id") if clusters else "pairs.case_id"
    join = f"LEFT JOIN {clusters} cl ON cl.case_id = pairs.case_id" if clusters else ""
    return f"""
WITH pairs AS ({pairs}),
per_cluster AS (
    SELECT {groups}, {cluster} AS cluster,
           round(sum(d), 9) AS s, count(*) AS n, round(sum(d * d), 9) AS q,
           count(*) FILTER (WHERE d < 0) AS w, count(*) FILTER (WHERE d > 0) AS b
    FROM pairs {join}
    GROUP BY ALL
)
SELECT {groups}, s, n, q, w, b, count(*) FROM per_cluster GROUP BY ALL
"""


def paired_by_group(rows: Iterable[tuple[Any, ...]], *, alpha: float = DEFAULT_ALPHA) -> dict[Any, PairedStats]:
    """``(group..., sum, cases, squares, worse, better, clusters)`` rows -> group -> PairedStats.

    The group is the leading columns (one column: its value; several: a tuple).
    """
    histograms: dict[Any, dict[Unit, int]] = {}
    for row in rows:
        *group, total, cases, squares, worse, better, count = row
        key = group[0] if len(group) == 1 else tuple(group)
        unit = Unit(float(total), int(cases), float(squares), int(worse), int(better))
        bucket = histograms.setdefault(key, {})
        bucket[unit] = bucket.get(unit, 0) + int(count)
    return {key: compare_units(hist, alpha=alpha) for key, hist in histograms.items()}


def scores_by_group(rows: Iterable[tuple[Any, ...]]) -> dict[Any, dict[str, Any]]:
    """The same rows over per-case score differences -> group -> ``score_delta`` (mean per-case
    change of the mean score), its 95% interval from the cluster-robust standard error (scores
    are continuous: a bootstrap would cost a draw per distinct value) and Wilcoxon's
    signed-rank p-value: on the cases, or with clusters on each cluster's mean change (the
    clusters are the independent units)."""
    histograms: dict[Any, dict[tuple[float, int, float], int]] = {}
    for row in rows:
        *group, total, cases, squares, _worse, _better, count = row
        key = group[0] if len(group) == 1 else tuple(group)
        bucket = histograms.setdefault(key, {})
        unit = (float(total), int(cases), float(squares))
        bucket[unit] = bucket.get(unit, 0) + int(count)
    found: dict[Any, dict[str, Any]] = {}
    for key, units in histograms.items():
        cases = sum(size * n for (_, size, _), n in units.items())
        if not cases:
            continue
        delta = sum(total * n for (total, _, _), n in units.items()) / cases
        spread = clustered_mean(units)
        means: dict[float, int] = {}
        for (total, size, _), n in units.items():
            means[round(total / size, 9)] = means.get(round(total / size, 9), 0) + n
        found[key] = {"score_delta": delta,
                      "score_delta_ci95": list(normal_interval(delta, spread.se_clustered))
                      if spread is not None else None,
                      "wilcoxon_p_value": wilcoxon_signed_rank(means)}
    return found


def adjust_table(table: dict[Any, dict[Any, PairedStats]]) -> dict[Any, dict[Any, PairedStats]]:
    """A per-evaluator table (variant -> evaluator -> PairedStats) with each p-value's
    Benjamini-Hochberg adjustment over the whole table (every variant x evaluator)."""
    keys = [(v, e) for v, by in table.items() for e, s in by.items() if s.mcnemar_p_value is not None]
    adjusted = benjamini_hochberg([table[v][e].mcnemar_p_value or 0.0 for v, e in keys])
    out = {v: dict(by) for v, by in table.items()}
    for (v, e), p in zip(keys, adjusted):
        out[v][e] = out[v][e].model_copy(update={"p_value_adjusted": p, "adjustment": "benjamini_hochberg"})
    return out
