"""Compare two runs A (the baseline) and B: per (variant, case) flips and per-variant deltas.

Each run is judged by its own ``pass_criteria`` (from its config.yaml snapshot) through the
shared cell verdict of :mod:`evalh_pipeline.queries.cells`. Each (variant, case) has a
pass fraction (the share of its samples that passed: 0 or 1 with one sample per case);
flips are counted on the (variant, case) pairs both runs have and judged (a pair with a
result that could not be judged in either run is counted apart: ``cases_not_judged``): a regression is a case whose
fraction went down, an improvement one whose fraction went up. The same pairs give the
paired statistics (McNemar's exact test, bootstrap CI of the delta), overall and per
evaluator. Pass rates, latency, cost and tokens are each run's own per-variant figures (as
in its summary), and every delta is B minus A.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from pydantic import BaseModel

from evalh_pipeline.models import ComparisonReport, PairedStats, VariantDelta, VariantSummary
from evalh_pipeline.queries.cell_store import answer_again
from evalh_pipeline.queries.cells import (
    EVALUATOR_FRACTIONS_SQL,
    NOT_JUDGED_CASES_SQL,
    PASS_FRACTIONS_SQL,
    VARIANTS_SQL,
    load_cells,
    run_pass_criteria,
    variant_summary,
)
from evalh_pipeline.queries.clusters import load_case_clusters, snapshot_cluster_by
from evalh_pipeline.queries.evaluator_configs import EvaluatorConfigChange, config_changes, evaluator_only_regressions
from evalh_pipeline.queries.significance import (
    DIFFERENCE,
    adjust_table,
    clustered_sql,
    paired_by_group,
    score_sql,
    scores_by_group,
)
from evalh_pipeline.queries.sql import connect, one_row
from evalh_pipeline.stats.multiplicity import holm
from evalh_pipeline.store.run_dir import RunDirectory

PER_CASE_SQL = "CREATE TEMP TABLE {per_case} AS " + PASS_FRACTIONS_SQL

PER_EVALUATOR_SQL = "CREATE TEMP TABLE {per_evaluator} AS " + EVALUATOR_FRACTIONS_SQL

# A (variant, case) not judged in either run is neither compared nor "only in" one run:
# it is counted as not judged.
FLIPS_SQL = f"""
WITH not_judged AS ({NOT_JUDGED_CASES_SQL.format(cells="cells_a")} UNION {NOT_JUDGED_CASES_SQL.format(cells="cells_b")}),
flips AS (
SELECT coalesce(a.variant_name, b.variant_name) AS variant_name,
       count(*) FILTER (WHERE a.case_id IS NOT NULL AND b.case_id IS NOT NULL) AS shared,
       count(*) FILTER (WHERE b.case_id IS NULL) AS only_in_a,
       count(*) FILTER (WHERE a.case_id IS NULL) AS only_in_b,
       coalesce(list(a.case_id ORDER BY a.case_id) FILTER (WHERE a.fraction > b.fraction), []) AS regressions,
       coalesce(list(a.case_id ORDER BY a.case_id) FILTER (WHERE a.fraction < b.fraction), []) AS improvements
FROM per_case_a a FULL OUTER JOIN per_case_b b USING (variant_name, case_id)
WHERE NOT EXISTS (SELECT 1 FROM not_judged n WHERE n.variant_name = coalesce(a.variant_name, b.variant_name)
                  AND n.case_id = coalesce(a.case_id, b.case_id))
GROUP BY ALL
), counted AS (SELECT variant_name, count(*) AS not_judged FROM not_judged GROUP BY ALL)
SELECT coalesce(f.variant_name, c.variant_name), coalesce(f.shared, 0), coalesce(f.only_in_a, 0),
       coalesce(f.only_in_b, 0), coalesce(f.regressions, []), coalesce(f.improvements, []),
       coalesce(c.not_judged, 0)
FROM flips f FULL OUTER JOIN counted c USING (variant_name)
"""

# Clustered by run B's run.cluster_by over its cases (queries/clusters.py).
PAIRED_SQL = clustered_sql(f"""
SELECT variant_name, case_id, {DIFFERENCE.format(after="b", before="a")} AS d
FROM per_case_a a JOIN per_case_b b USING (variant_name, case_id)
""", "variant_name")

EVALUATOR_PAIRED_SQL = clustered_sql(f"""
SELECT variant_name, evaluator, case_id, {DIFFERENCE.format(after="b", before="a")} AS d
FROM per_evaluator_a a JOIN per_evaluator_b b USING (evaluator, variant_name, case_id)
""", "variant_name, evaluator")

EVALUATOR_SCORES_SQL = score_sql("""
SELECT variant_name, evaluator, case_id, round(b.score - a.score, 9) AS d
FROM per_evaluator_a a JOIN per_evaluator_b b USING (evaluator, variant_name, case_id)
WHERE a.score IS NOT NULL AND b.score IS NOT NULL
""", "variant_name, evaluator")

VARIANT_PAIRS_SQL = f"""
WITH a AS ({VARIANTS_SQL.format(cells="cells_a")}),
     b AS ({VARIANTS_SQL.format(cells="cells_b")})
SELECT coalesce(a.variant_name, b.variant_name) AS variant_name, a, b
FROM a FULL OUTER JOIN b ON a.variant_name = b.variant_name
"""


@dataclass(frozen=True)
class VariantComparison:
    """One variant's figures in both runs; deltas are B minus A (None when either side lacks the metric)."""

    variant: str
    a: VariantSummary
    b: VariantSummary
    pass_rate_delta: float
    avg_latency_delta_ms: float
    avg_cost_delta_usd: float | None = None
    avg_tokens_input_delta: float | None = None
    avg_tokens_output_delta: float | None = None
    cases_compared: int = 0
    cases_only_in_a: int = 0
    cases_only_in_b: int = 0
    regressions: int = 0
    improvements: int = 0
    # Cases not compared because a result deciding them could not be judged in A or in B.
    cases_not_judged: int = 0


@dataclass(frozen=True)
class RunComparison:
    """``evalh compare``: run B against run A (``comparison.baseline`` is A's run id)."""

    run_a: str
    run_b: str
    comparison: ComparisonReport
    variants: list[VariantComparison]
    variants_only_in_a: list[str] = field(default_factory=list)
    variants_only_in_b: list[str] = field(default_factory=list)
    # Cells (traces) run B has: 0 for an empty run (no case selected), which no gate passes.
    cells_b: int = 0
    # Evaluators judged with different configs in A and B (queries/evaluator_configs.py), and
    # per variant the regressions they alone explain (same answers): not regressions of the system.
    evaluator_changes: list[EvaluatorConfigChange] = field(default_factory=list)
    evaluator_only_regressions: dict[str, list[str]] = field(default_factory=dict)

    @property
    def system_regressions_count(self) -> int:
        """Regressed cases, less those whose only change is an evaluator's config."""
        return (self.comparison.regressions_count or 0) - sum(len(c) for c in self.evaluator_only_regressions.values())

    @property
    def has_regressions(self) -> bool:
        """Whether a case regressed with something other than an evaluator's config changed."""
        return self.system_regressions_count > 0

    @property
    def run_b_empty(self) -> bool:
        """Run B has no cell at all: there is nothing the gate could have checked."""
        return self.cells_b == 0

    def has_significant_regression(self, alpha: float) -> bool:
        """Whether some variant regressed significantly at ``alpha`` (McNemar's test), its
        p-value Holm-adjusted over the variants compared (the gate's family). A variant whose
        every regression is evaluator-config-only has no regression of the system to test."""
        tested = [d for d in self.comparison.deltas
                  if d.significance is not None and d.significance.mcnemar_p_value is not None]
        adjusted = holm([d.significance.mcnemar_p_value or 0.0 for d in tested if d.significance])
        return any(p < alpha and d.significance.cases_worse > d.significance.cases_better
                   and self._has_system_regression(d) for d, p in zip(tested, adjusted) if d.significance)

    def _has_system_regression(self, delta: VariantDelta) -> bool:
        evaluator_only = self.evaluator_only_regressions.get(delta.variant, [])
        return not evaluator_only or len(delta.regressions) > len(evaluator_only)

    def to_dict(self) -> dict[str, Any]:
        """As JSON types: the records in it as their models dump them."""
        plain: dict[str, Any] = _plain(self)
        return plain

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)


def _plain(value: Any) -> Any:
    """``value`` with every dataclass and model in it as plain JSON types."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _delta(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _order(run_a: RunDirectory, run_b: RunDirectory, names: set[str]) -> list[str]:
    declared: list[str] = []
    for run in (run_b, run_a):
        try:
            declared += [v for v in run.read_meta().get("variants", []) if v not in declared]
        except (FileNotFoundError, ValueError):
            pass
    return [v for v in declared if v in names] + sorted(names - set(declared))


def compare_runs(run_a: RunDirectory, run_b: RunDirectory) -> RunComparison:
    """Compare run B with run A (the baseline), each judged by its own pass_criteria."""
    return answer_again(lambda: _compare_runs(run_a, run_b))


def _compare_runs(run_a: RunDirectory, run_b: RunDirectory) -> RunComparison:
    con = connect()
    try:
        for suffix, run in (("_a", run_a), ("_b", run_b)):
            load_cells(con, run, run_pass_criteria(run), suffix=suffix, cached=True)
            con.execute(PER_CASE_SQL.format(per_case=f"per_case{suffix}", cells=f"cells{suffix}"))
            con.execute(PER_EVALUATOR_SQL.format(per_evaluator=f"per_evaluator{suffix}", verdicts=f"verdicts{suffix}",
                                                 traces=f"cell_traces{suffix}"))
        load_case_clusters(con, run_b, snapshot_cluster_by(run_b))
        stats = {name: (a, b) for name, a, b in con.execute(VARIANT_PAIRS_SQL).fetchall()}
        flips = {row[0]: row for row in con.execute(FLIPS_SQL).fetchall()}
        (cells_b,) = one_row(con.execute("SELECT count(*) FROM cells_b"))
        significance = paired_by_group(con.execute(PAIRED_SQL).fetchall())
        per_evaluator: dict[str, dict[str, PairedStats]] = {}
        scores = scores_by_group(con.execute(EVALUATOR_SCORES_SQL).fetchall())
        for (variant, evaluator), paired in sorted(paired_by_group(con.execute(EVALUATOR_PAIRED_SQL).fetchall()).items()):
            per_evaluator.setdefault(variant, {})[evaluator] = paired.model_copy(
                update=scores.get((variant, evaluator), {}))
        per_evaluator = adjust_table(per_evaluator)
        changes = config_changes(run_a, run_b)
        evaluator_only = (evaluator_only_regressions(con, run_a, run_b, [c.evaluator for c in changes])
                          if changes and any(row[4] for row in flips.values()) else {})
    finally:
        con.close()

    deltas: list[VariantDelta] = []
    variants: list[VariantComparison] = []
    only_a: list[str] = []
    only_b: list[str] = []
    for name in _order(run_a, run_b, set(stats)):
        row_a, row_b = stats[name]
        if row_b is None or row_b["variant_name"] is None:
            only_a.append(name)
            continue
        if row_a is None or row_a["variant_name"] is None:
            only_b.append(name)
            continue
        a, b = variant_summary(tuple(row_a.values())), variant_summary(tuple(row_b.values()))
        _, shared, in_a, in_b, regressions, improvements, not_judged = flips.get(name, (name, 0, 0, 0, [], [], 0))
        delta = VariantDelta(
            variant=name,
            pass_rate_delta=b.pass_rate - a.pass_rate,
            avg_latency_delta_ms=b.avg_latency_ms - a.avg_latency_ms,
            regressions=list(regressions),
            improvements=list(improvements),
            significance=significance.get(name),
            by_evaluator=per_evaluator.get(name, {}),
        )
        deltas.append(delta)
        variants.append(VariantComparison(
            variant=name, a=a, b=b,
            pass_rate_delta=delta.pass_rate_delta,
            avg_latency_delta_ms=delta.avg_latency_delta_ms,
            avg_cost_delta_usd=_delta(b.avg_cost_usd, a.avg_cost_usd),
            avg_tokens_input_delta=_delta(b.avg_tokens_input, a.avg_tokens_input),
            avg_tokens_output_delta=_delta(b.avg_tokens_output, a.avg_tokens_output),
            cases_compared=shared, cases_only_in_a=in_a, cases_only_in_b=in_b,
            regressions=len(delta.regressions), improvements=len(delta.improvements),
            cases_not_judged=not_judged,
        ))
    return RunComparison(
        run_a=run_a.run_id,
        run_b=run_b.run_id,
        comparison=ComparisonReport(
            baseline=run_a.run_id,
            deltas=deltas,
            kind="ad_hoc",
            regressions_count=sum(len(d.regressions) for d in deltas),
            improvements_count=sum(len(d.improvements) for d in deltas),
        ),
        variants=variants,
        variants_only_in_a=only_a,
        variants_only_in_b=only_b,
        cells_b=cells_b,
        evaluator_changes=changes,
        evaluator_only_regressions=evaluator_only,
    )
