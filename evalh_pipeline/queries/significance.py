"""Paired statistics over DuckDB tables of per-case pass fractions.

A query of per-case differences (``(group..., case_id, d)`` rows, :data:`DIFFERENCE`) is
wrapped by :func:`clustered_sql` into one row per (group, kind of cluster) with the number
of clusters of that kind: a cluster is the cases sharing a ``run.cluster_by`` value (the
``case_clusters`` table, queries/clusters.py), or one case. :func:`paired_by_group` turns
them into one :class:`~evalh_pipeline.models.PairedStats` per group. Differences are
rounded so that equal fractions (k/n) group together despite floating-point noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from evalh_pipeline.models import PairedStats
from evalh_pipeline.queries.clusters import CLUSTER_OF
from evalh_pipeline.stats.multiplicity import benjamini_hochberg
from evalh_pipeline.stats.paired import DEFAULT_ALPHA, Unit, compare_units, normal_interval
from evalh_pipeline.stats.signed_rank import signed_rank_p_value

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


def score_sql(pairs: str, groups: str, clusters: str | None = "case_clusters") -> str:
    """``pairs`` (``groups``, case_id and d: per-case score changes) summed up in one row per
    group: cases, clusters, the sums the cluster-robust variance needs (of s, s², s·n and n² over
    clusters of sum s and n cases) and Wilcoxon's signed-rank figures on the clusters' mean
    changes (non-zero ones, ranked by size with ties averaged: a group of t tied sizes after
    ``below`` smaller ones shares the rank below + (t + 1) / 2): n, the positive rank sum and
    the tie term sum(t³ - t). Aggregated in SQL: scores are continuous, a row per value would
    cost more than the rest of a comparison."""
    cluster = CLUSTER_OF.format(clusters="cl", case_id="pairs.case_id") if clusters else "pairs.case_id"
    join = f"LEFT JOIN {clusters} cl ON cl.case_id = pairs.case_id" if clusters else ""
    return f"""
WITH pairs AS ({pairs}),
per_cluster AS MATERIALIZED (
    SELECT {groups}, {cluster} AS cluster, sum(d) AS s, count(*) AS n, round(sum(d) / count(*), 9) AS x
    FROM pairs {join}
    GROUP BY ALL
),
sizes AS (
    SELECT {groups}, abs(x) AS size, count(*) AS t, count(*) FILTER (WHERE x > 0) AS up
    FROM per_cluster WHERE x <> 0 GROUP BY ALL
),
ranked AS (
    SELECT {groups}, t, up, sum(t) OVER (PARTITION BY {groups} ORDER BY size ROWS UNBOUNDED PRECEDING) - t AS below
    FROM sizes
),
signed AS (
    SELECT {groups}, sum(t) AS n_ranked, sum(up * (below + (t + 1) / 2.0)) AS r_plus, sum(t * t * t - t) AS ties
    FROM ranked GROUP BY ALL
),
spread AS (
    SELECT {groups}, sum(n) AS cases, count(*) AS clusters, sum(s) AS s, sum(s * s) AS ss,
           sum(s * n) AS sn, sum(n * n) AS nn
    FROM per_cluster GROUP BY ALL
)
SELECT {", ".join(f"spread.{g.strip()}" for g in groups.split(","))}, cases, clusters, s, ss, sn, nn,
       coalesce(n_ranked, 0), coalesce(r_plus, 0), coalesce(ties, 0)
FROM spread LEFT JOIN signed USING ({groups})
"""


def scores_by_group(rows: Iterable[tuple[Any, ...]]) -> dict[Any, dict[str, Any]]:
    """:func:`score_sql` rows -> group -> ``score_delta`` (mean per-case change of the mean
    score), its 95% interval from the cluster-robust standard error (Liang-Zeger, as
    stats/clustering.py) and Wilcoxon's signed-rank p-value: on the cases, or with clusters
    on each cluster's mean change (the clusters are the independent units)."""
    found: dict[Any, dict[str, Any]] = {}
    for row in rows:
        *group, cases, clusters, s, ss, sn, nn, n_ranked, r_plus, ties = row
        key = group[0] if len(group) == 1 else tuple(group)
        if not cases:
            continue
        delta = float(s) / cases
        interval = None
        if clusters >= 2:
            squares = float(ss) - 2.0 * delta * float(sn) + delta * delta * float(nn)
            se = math.sqrt(max(0.0, clusters / (clusters - 1) * squares) / cases ** 2)
            interval = list(normal_interval(delta, se))
        found[key] = {"score_delta": delta, "score_delta_ci95": interval,
                      "wilcoxon_p_value": signed_rank_p_value(int(n_ranked), float(r_plus), float(ties))}
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
