"""The run summary as DuckDB SQL over traces.jsonl and results.jsonl.

Cells and their verdicts come from :mod:`evalh_pipeline.queries.cells`. The baseline
comparison pairs each case's pass fraction on a variant with its fraction on the baseline
variant: a case regressed when its fraction went down (with one sample per case: it passed
on the baseline and not on the variant), and the paired statistics (McNemar's exact test,
bootstrap CI of the delta) are computed overall and per evaluator. With several samples
per case each variant also gets pass@k, pass^k and its flaky cases.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from datetime import datetime, timezone
from typing import Any

from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.models import (
    NOT_JUDGED_ERRORS,
    ComparisonReport,
    EvaluatorRollup,
    EvaluatorVariantRollup,
    NotJudged,
    PairedStats,
    RepeatStats,
    RunSummary,
    VariantDelta,
    VariantSummary,
)
from evalh_pipeline.queries.cell_store import Store, refresh_store
from evalh_pipeline.queries.cells import (
    EVALUATOR_FIGURES_SQL,
    EVALUATOR_FRACTIONS_SQL,
    NOT_JUDGED_CASES_SQL,
    PASS_FRACTIONS_SQL,
    VARIANTS_SQL,
    create_cells,
    with_case_evaluators,
    variant_summary,
)
from evalh_pipeline.queries.clusters import CLUSTER_OF, load_case_clusters
from evalh_pipeline.queries.significance import (
    DIFFERENCE,
    adjust_table,
    clustered_sql,
    paired_by_group,
    score_sql,
    scores_by_group,
)
from evalh_pipeline.queries.sql import connect, duckdb, jsonl_table
from evalh_pipeline.stats.clustering import clustered_mean
from evalh_pipeline.stats.proportions import wilson_interval
from evalh_pipeline.stats.repeats import repeat_figures
from evalh_pipeline.store.run_dir import RunDirectory

# The summary's queries below read each (variant, case)'s pass fraction from this table,
# made once per summary.
CASE_FRACTIONS_SQL = f"CREATE TEMP TABLE per_case AS {PASS_FRACTIONS_SQL.format(cells='cells')}"

# A case not judged on the variant or on the baseline variant is left out (NOT_JUDGED_CASES_SQL).
FLIPS_SQL = f"""
WITH base AS (SELECT case_id, fraction FROM per_case WHERE variant_name = $baseline),
     not_judged AS ({NOT_JUDGED_CASES_SQL.format(cells="cells")})
SELECT v.variant_name,
       list(DISTINCT c.case_id ORDER BY c.case_id)
           FILTER (WHERE coalesce(b.fraction, 0) > coalesce(p.fraction, 0)) AS regressions,
       list(DISTINCT c.case_id ORDER BY c.case_id)
           FILTER (WHERE p.fraction IS NOT NULL AND p.fraction > coalesce(b.fraction, 0)) AS improvements
FROM (SELECT DISTINCT variant_name FROM cells WHERE variant_name <> $baseline) v
CROSS JOIN (SELECT DISTINCT case_id FROM cells) c
LEFT JOIN base b ON b.case_id = c.case_id
LEFT JOIN per_case p ON p.case_id = c.case_id AND p.variant_name = v.variant_name
WHERE NOT EXISTS (SELECT 1 FROM not_judged n WHERE n.case_id = c.case_id
                  AND n.variant_name IN (v.variant_name, $baseline))
GROUP BY v.variant_name
"""

# Each variant's cases paired with the baseline variant's, by cluster (queries/significance.py).
PAIRED_SQL = clustered_sql(f"""
SELECT p.variant_name, p.case_id, {DIFFERENCE.format(after="p", before="b")} AS d
FROM per_case p JOIN per_case b ON b.case_id = p.case_id AND b.variant_name = $baseline
WHERE p.variant_name <> $baseline
""", "variant_name")

# Of the evaluators in $evaluators only, unless $every (the others' rows are remembered by
# the cell store), from the rows of {source} (``verdicts``, or the store's files that hold them):
# each case's change of pass fraction, or (``score``) of mean score where both sides have one.
def _evaluator_pairs(column: str, wrap: Callable[..., str] = clustered_sql) -> str:
    return wrap(f"""
WITH f AS NOT MATERIALIZED ({EVALUATOR_FRACTIONS_SQL.format(
        verdicts="(SELECT * FROM {source} WHERE $every OR list_contains($evaluators, evaluator))",
        traces="cell_traces")})
SELECT p.variant_name, p.evaluator, p.case_id, round(p.{column} - b.{column}, 9) AS d
FROM f p JOIN f b ON b.evaluator = p.evaluator AND b.case_id = p.case_id AND b.variant_name = $baseline
WHERE p.variant_name <> $baseline AND p.{column} IS NOT NULL AND b.{column} IS NOT NULL
""", "variant_name, evaluator")


_EVALUATOR_PAIRED = _evaluator_pairs("fraction")
_EVALUATOR_SCORES = _evaluator_pairs("score", score_sql)
EVALUATOR_PAIRED_SQL = _EVALUATOR_PAIRED.format(source="verdicts")

REPEATS_SQL = """
SELECT variant_name, case_id, samples, passed_samples
FROM per_case
ORDER BY variant_name, case_id
"""


def repeat_stats(con: Any) -> dict[str, RepeatStats]:
    """Variant -> pass@k, pass^k, case pass fractions and flaky cases, when some case has
    several samples (``samples_per_case`` is the most samples any case has); from the
    ``per_case`` table (:data:`CASE_FRACTIONS_SQL`)."""
    (samples_per_case,) = con.execute("SELECT coalesce(max(samples), 1) FROM per_case").fetchone()
    if samples_per_case <= 1:
        return {}
    by_variant: dict[str, list[tuple[str, int, int]]] = {}
    for variant, case_id, samples, passed in con.execute(REPEATS_SQL).fetchall():
        by_variant.setdefault(variant, []).append((case_id, samples, passed))
    return {variant: repeat_figures(cases, samples_per_case)
            for variant, cases in by_variant.items()}


# Per variant and cluster: cases and cases passed (a case passes when all its samples did).
CLUSTER_PASSES_SQL = f"""
SELECT variant_name, {CLUSTER_OF.format(clusters="cl", case_id="p.case_id")} AS cluster,
       count(*) FILTER (WHERE p.passed_samples = p.samples) AS passed, count(*) AS cases
FROM per_case p LEFT JOIN case_clusters cl ON cl.case_id = p.case_id
GROUP BY ALL
"""


def clustered_pass_rates(con: Any, variants: list[VariantSummary]) -> list[VariantSummary]:
    """``variants`` with their clusters, design effect and Wilson interval on the effective
    sample size, from the ``per_case`` and ``case_clusters`` tables."""
    by_variant: dict[str, list[tuple[float, int, float]]] = {}
    for variant, _, passed, cases in con.execute(CLUSTER_PASSES_SQL).fetchall():
        by_variant.setdefault(variant, []).append((float(passed), int(cases), float(passed)))
    out = []
    for v in variants:
        spread = clustered_mean(by_variant.get(v.name, []))
        if spread is None:
            out.append(v)
            continue
        ci = wilson_interval(v.cases_passed, v.cases_total - v.cases_not_judged, design_effect=spread.design_effect)
        out.append(v.model_copy(update={"clusters": spread.clusters, "design_effect": spread.design_effect,
                                        "pass_rate_ci": list(ci) if ci is not None else None}))
    return out


# What the cell store remembers of each evaluator: its PairedStats by variant (a new name for
# a new shape, so that what an older version remembered is never read as this).
_PAIRED_MEMO = "evaluator_paired_stats_clustered"


def paired_stats(con: Any, baseline: str, store: Store | None = None, cluster_by: str | None = None,
                 ) -> tuple[dict[str, PairedStats], dict[str, dict[str, PairedStats]]]:
    """Variant -> paired statistics against ``baseline``, and variant -> evaluator -> the same
    (with Benjamini-Hochberg-adjusted p-values over that table), clustered by the
    ``case_clusters`` table (made for ``cluster_by``).

    An evaluator's statistics depend only on its own verdicts, the traces and the clusters:
    the ``store`` remembers them, so after one evaluator was re-judged only its are computed again.
    """
    memo_key = [baseline, cluster_by]
    overall = paired_by_group(con.execute(PAIRED_SQL, {"baseline": baseline}).fetchall())
    names = [name for (name,) in con.execute("SELECT DISTINCT evaluator FROM verdicts").fetchall()]
    found: dict[tuple[Any, Any], PairedStats] = {}
    todo = []
    for name in names:
        known: Any = store.recall(_PAIRED_MEMO, name, memo_key) if store is not None and name is not None else None
        try:
            found.update({(variant, name): PairedStats.model_validate(stats) for variant, stats in known})
        except (TypeError, ValueError):  # nothing remembered (None), or not in this shape: computed again
            todo.append(name)
    if todo:
        if None in todo:  # results without an evaluator name: every evaluator, as they are
            todo, found = names, {}
        every = todo == names
        # Only the store's files that hold those evaluators' verdicts, when it can say.
        source = None if every or store is None else store.verdicts_of([n for n in todo if n is not None])
        parameters = {"baseline": baseline, "every": every, "evaluators": [n for n in todo if n is not None]}
        rows = con.execute(_EVALUATOR_PAIRED.format(source=source or "verdicts"), parameters).fetchall()
        scores = scores_by_group(con.execute(_EVALUATOR_SCORES.format(source=source or "verdicts"), parameters).fetchall())
        computed = {key: stats.model_copy(update=scores.get(key, {})).model_dump()
                    for key, stats in paired_by_group(rows).items()}
        found.update({key: PairedStats.model_validate(stats) for key, stats in computed.items()})
        if store is not None and None not in todo:
            for name in todo:
                store.remember(_PAIRED_MEMO, name, memo_key,
                               [[variant, stats] for (variant, evaluator), stats in computed.items() if evaluator == name])
    per_evaluator: dict[str, dict[str, PairedStats]] = {}
    for (variant, evaluator), stats in sorted(found.items()):
        per_evaluator.setdefault(variant, {})[evaluator] = stats
    return overall, adjust_table(per_evaluator)


def summarize_run(
    run_dir: RunDirectory,
    *,
    variant_order: list[str],
    pass_criteria: PassCriteria,
    baseline_variant: str | None,
    config_path: str,
    config_hash: str,
    cases_total: int | None = None,
    metadata: dict[str, Any] | None = None,
    cluster_by: str | None = None,
    traces_digest: str | None = None,
) -> RunSummary:
    """Build the RunSummary of a run directory from its JSONL files (through its cell store,
    which this brings up to date: hold the run's lock). ``cases_total`` None: the cases of
    the run's cases snapshot (counted once per snapshot, through the cell store).
    ``traces_digest``: as :func:`refresh_store` takes it."""
    for attempt in range(2):
        con = connect()
        store = None  # refresh_store's own errors are raised as they are
        try:
            store = refresh_store(con, run_dir, traces_digest)
            return _summarize(con, store, run_dir, variant_order=variant_order, pass_criteria=pass_criteria,
                              baseline_variant=baseline_variant, config_path=config_path, config_hash=config_hash,
                              cases_total=cases_total, metadata=metadata, cluster_by=cluster_by)
        except duckdb.Error:
            if attempt or store is None or not store.views:
                raise
            # A file of the store read back at first but not in full (a damaged page): the
            # store is dropped, and the summary made again from the JSONL (rebuilding it).
            store.discard()
        finally:
            con.close()
    raise AssertionError("unreachable")


def _summarize(con: Any, store: Store, run_dir: RunDirectory, *, variant_order: list[str],
               pass_criteria: PassCriteria, baseline_variant: str | None, config_path: str, config_hash: str,
               cases_total: int | None, metadata: dict[str, Any] | None, cluster_by: str | None) -> RunSummary:
    if cases_total is None:
        cases_total = store.cases_total()
    create_cells(con, with_case_evaluators(pass_criteria, run_dir))
    con.execute(CASE_FRACTIONS_SQL)
    load_case_clusters(con, run_dir, cluster_by)
    rows = {r[0]: r for r in con.execute(VARIANTS_SQL.format(cells="cells")).fetchall()}
    order = [v for v in variant_order if v in rows] + sorted(set(rows) - set(variant_order))
    variants = [variant_summary(rows[name]) for name in order]
    repeats = repeat_stats(con)
    variants = [v.model_copy(update={"repeats": repeats.get(v.name)}) for v in variants]
    if cluster_by:
        variants = clustered_pass_rates(con, variants)
    rollups: dict[str, dict[str, EvaluatorVariantRollup]] = {}
    for evaluator, variant, rate, score, errored, not_judged in con.execute(EVALUATOR_FIGURES_SQL).fetchall():
        rollups.setdefault(evaluator, {})[variant] = EvaluatorVariantRollup(
            pass_rate=rate, avg_score=score, errored=errored, not_judged=not_judged)

    comparison = None
    if baseline_variant is not None and baseline_variant in rows:
        by_name = {v.name: v for v in variants}
        flips = {r[0]: r for r in con.execute(FLIPS_SQL, {"baseline": baseline_variant}).fetchall()}
        base = by_name[baseline_variant]
        significance, per_evaluator = paired_stats(con, baseline_variant, store, cluster_by)
        deltas = [
            VariantDelta(
                variant=v.name,
                pass_rate_delta=v.pass_rate - base.pass_rate,
                avg_latency_delta_ms=v.avg_latency_ms - base.avg_latency_ms,
                regressions=(flips.get(v.name) or (None, [], []))[1] or [],
                improvements=(flips.get(v.name) or (None, [], []))[2] or [],
                significance=significance.get(v.name),
                by_evaluator=per_evaluator.get(v.name, {}),
            )
            for v in variants if v.name != baseline_variant
        ]
        comparison = ComparisonReport(
            baseline=baseline_variant,
            deltas=deltas,
            kind="ad_hoc",
            regressions_count=sum(len(d.regressions) for d in deltas),
            improvements_count=sum(len(d.improvements) for d in deltas),
        )
    reused, origins = con.execute(
        "SELECT count(reused_from), coalesce(list(DISTINCT reused_from ORDER BY reused_from) "
        "FILTER (WHERE reused_from IS NOT NULL), []) FROM cell_traces"
    ).fetchone()
    starts = [rows[n][8] for n in order if rows[n][8]]
    ends = [rows[n][9] for n in order if rows[n][9]]
    now = datetime.now(timezone.utc)
    store.save()
    return RunSummary(
        run_id=run_dir.run_id,
        started_at=min(starts) if starts else now,
        finished_at=max(ends) if ends else now,
        config_path=config_path,
        config_hash=config_hash,
        cases_total=cases_total,
        variants=variants,
        by_evaluator=[EvaluatorRollup(evaluator=name, by_variant=by) for name, by in rollups.items()],
        comparison=comparison,
        metadata=metadata or {},
        reused_traces=reused,
        reused_from=list(origins),
        not_judged=not_judged_results(con, run_dir, rollups),
    )


def not_judged_results(con: Any, run_dir: RunDirectory,
                       rollups: dict[str, dict[str, EvaluatorVariantRollup]]) -> NotJudged | None:
    """The run's results that could not be judged, counted from the rollups, with the first
    one's error read from results.jsonl (only when there is one)."""
    by_evaluator = {name: n for name, by in rollups.items() if (n := sum(r.not_judged for r in by.values()))}
    if not by_evaluator:
        return None
    rows = jsonl_table(run_dir.results, {"error": "STRUCT(type VARCHAR, message VARCHAR)"})
    first = con.execute(f"SELECT error.type, error.message FROM {rows} WHERE list_contains($types, error.type) "
                        "LIMIT 1", {"types": list(NOT_JUDGED_ERRORS)}).fetchone()
    kind, message = first if first is not None else ("judge_error", "")
    # The message starts with the exception's class name (runner/result_lines.py raised): the words say it.
    message = re.sub(r"^\w+: ", "", message or "")
    return NotJudged(results=sum(by_evaluator.values()), by_evaluator=by_evaluator,
                     why=NOT_JUDGED_ERRORS.get(kind, NOT_JUDGED_ERRORS["judge_error"]), message=message or "")
