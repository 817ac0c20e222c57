"""`evalh plan`: how many cases an eval needs to detect a change of a given size, from a pilot run.

For each variant compared with the pilot's baseline variant, the per-case discordance
``psi`` (the mean squared change of a case's pass fraction: the share of cases that moved,
with one sample per case) and the design effect ``deff`` of its clusters (``run.cluster_by``)
give the closed form of stats/proportions.py (Connor 1987, first order):

    n = ceil((z_{1-alpha/2} + z_{power})**2 * psi * deff / mde**2)

once with ``deff`` = 1 (cases independent) and once with the pilot's design effect. A variant
without a baseline to pair with uses ``psi = 2 p (1 - p)`` of its own pass rate p: the
discordance of two runs whose verdicts are independent (an upper bound when they agree more).
A pilot where nothing moved counts one moved case (``psi`` at least 1 / pilot cases).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalh_pipeline.queries.cell_store import answer_again
from evalh_pipeline.queries.cells import load_cells, run_pass_criteria, run_section
from evalh_pipeline.queries.clusters import load_case_clusters, snapshot_cluster_by
from evalh_pipeline.queries.significance import paired_by_group
from evalh_pipeline.queries.sql import connect
from evalh_pipeline.queries.summary import CASE_FRACTIONS_SQL, CLUSTER_PASSES_SQL, PAIRED_SQL
from evalh_pipeline.stats.clustering import clustered_mean
from evalh_pipeline.stats.proportions import DEFAULT_POWER, cases_needed
from evalh_pipeline.store.run_dir import RunDirectory

FORMULA = "n = ceil((z_{1-alpha/2} + z_{power})^2 * psi * deff / mde^2)"


@dataclass(frozen=True)
class PlanRow:
    """What one variant's comparison needs: ``against`` is the baseline variant (None: its own pass rate)."""

    variant: str
    against: str | None
    pilot_cases: int
    discordance: float
    cases_needed: int
    clusters: int | None = None
    design_effect: float | None = None
    cases_needed_clustered: int | None = None


@dataclass(frozen=True)
class Plan:
    """``evalh plan``'s answer for one pilot run."""

    run_id: str
    mde: float
    alpha: float
    power: float
    cluster_by: str | None
    formula: str = FORMULA
    rows: list[PlanRow] = field(default_factory=list)


def plan_eval(run_dir: RunDirectory, mde: float, *, alpha: float = 0.05, power: float = DEFAULT_POWER,
              cluster_by: str | None = None) -> Plan:
    """The cases each of the pilot run's comparisons needs to detect ``mde`` (read-only)."""
    return answer_again(lambda: _plan(run_dir, mde, alpha, power, cluster_by))


def _plan(run_dir: RunDirectory, mde: float, alpha: float, power: float, cluster_by: str | None) -> Plan:
    cluster_by = cluster_by or snapshot_cluster_by(run_dir)
    baseline = run_section(run_dir).get("baseline_variant")
    con = connect()
    try:
        load_cells(con, run_dir, run_pass_criteria(run_dir), cached=True)
        con.execute(CASE_FRACTIONS_SQL)
        load_case_clusters(con, run_dir, cluster_by)
        variants = [name for (name,) in con.execute("SELECT DISTINCT variant_name FROM per_case ORDER BY 1").fetchall()]
        paired = paired_by_group(con.execute(PAIRED_SQL, {"baseline": baseline}).fetchall()) \
            if baseline in variants else {}
        own: dict[str, list[tuple[float, int, float]]] = {}
        for variant, _, passed, cases in con.execute(CLUSTER_PASSES_SQL).fetchall():
            own.setdefault(variant, []).append((float(passed), int(cases), float(passed)))
    finally:
        con.close()
    rows = []
    for variant in variants:
        if variant == baseline:
            continue
        stats = paired.get(variant)
        if stats is not None and stats.cases_compared:
            n, psi = stats.cases_compared, stats.discordance or 0.0
            clusters, deff = stats.clusters, stats.design_effect
            against = baseline
        else:
            n = sum(c for _, c, _ in own[variant])
            rate = sum(s for s, _, _ in own[variant]) / n
            psi, against = 2.0 * rate * (1.0 - rate), None
            spread = clustered_mean(own[variant]) if cluster_by else None
            clusters, deff = (spread.clusters, spread.design_effect) if spread is not None else (None, None)
        psi = max(psi, 1.0 / n)
        rows.append(PlanRow(
            variant=variant, against=against, pilot_cases=n, discordance=psi,
            cases_needed=cases_needed(psi, mde, alpha=alpha, power=power),
            clusters=clusters, design_effect=deff,
            cases_needed_clustered=cases_needed(psi, mde, design_effect=deff, alpha=alpha, power=power)
            if deff is not None else None,
        ))
    return Plan(run_id=run_dir.run_id, mde=mde, alpha=alpha, power=power, cluster_by=cluster_by, rows=rows)
