"""The run's view that sinks receive: its summary and its drift against the promoted baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalh_pipeline.common.yaml_files import load_yaml_text
from evalh_pipeline.models import RunSummary
from evalh_pipeline.queries.drift import promoted_drift
from evalh_pipeline.runs import read_summary
from evalh_pipeline.store.run_dir import RunDirectory


class DriftView(BaseModel):
    """The run against the eval's promoted baseline: counts, the first variant's pass-rate
    delta, and the case ids that regressed or improved (in the comparison's order)."""

    model_config = ConfigDict(frozen=True)

    baseline_run_id: str
    regressions_count: int
    improvements_count: int
    pass_rate_delta: float
    regressions: list[str]
    improvements: list[str]


class RunView(BaseModel):
    """What a sink receives once the run's summary is written."""

    model_config = ConfigDict(frozen=True)

    eval_name: str
    summary: RunSummary
    drift: DriftView | None


def read_view(run_dir: RunDirectory, eval_name: str | None = None, runs_root: Path | None = None) -> RunView:
    """The view of the run in ``run_dir`` (its summary must be written).

    ``eval_name`` defaults to the one in run.json; ``runs_root`` (where the promoted baseline
    is looked up) to the run's own folder.
    """
    name = eval_name or run_dir.read_meta().get("eval_name") or run_dir.run_id
    return RunView(eval_name=name, summary=read_summary(run_dir),
                   drift=_drift_view(_drift(run_dir, name, runs_root or run_dir.path.parent)))


def _drift(run_dir: RunDirectory, eval_name: str, runs_root: Path) -> dict[str, Any]:
    """drift.yaml when written, else the drift computed now (a sink hears of the run after its
    summary, before the drift stage, which a failed blocking gate may skip: a notification is
    wanted most then)."""
    if run_dir.drift.exists():
        return load_yaml_text(run_dir.drift.read_text(encoding="utf-8")) or {}
    try:
        promoted = promoted_drift(eval_name, run_dir, runs_root)
    except FileNotFoundError:  # the promoted baseline's folder is gone: a view without drift
        return {}
    if promoted is None:
        return {}
    baseline_run_id, _, comparison = promoted
    counts = comparison.comparison
    return {"baseline_run_id": baseline_run_id, "regressions_count": counts.regressions_count or 0,
            "improvements_count": counts.improvements_count or 0, "comparison": comparison.to_dict()}


def _drift_view(drift: dict[str, Any]) -> DriftView | None:
    if not (drift.get("baseline_run_id") and drift.get("comparison")):
        return None
    deltas = (drift["comparison"].get("comparison") or {}).get("deltas") or []
    return DriftView(
        baseline_run_id=drift["baseline_run_id"],
        regressions_count=int(drift.get("regressions_count") or 0),
        improvements_count=int(drift.get("improvements_count") or 0),
        pass_rate_delta=float(deltas[0]["pass_rate_delta"]) if deltas else 0.0,
        regressions=[c for d in deltas for c in d.get("regressions") or []],
        improvements=[c for d in deltas for c in d.get("improvements") or []],
    )
