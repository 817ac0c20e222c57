"""Drift: a run compared with its eval's promoted baseline run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from evalh_pipeline.queries.compare import RunComparison, compare_runs
from evalh_pipeline.store.baselines import current_baseline
from evalh_pipeline.store.run_dir import RunDirectory


def drift_report(run_dir: RunDirectory, baseline_dir: RunDirectory) -> RunComparison:
    """``run_dir`` against ``baseline_dir``, reported as a ``kind: drift`` comparison."""
    report = compare_runs(baseline_dir, run_dir)
    comparison = report.comparison.model_copy(update={"kind": "drift", "baseline_run_id": baseline_dir.run_id})
    return replace(report, comparison=comparison)


def promoted_drift(eval_name: str, run_dir: RunDirectory,
                   runs_root: Path | None = None) -> tuple[str, RunDirectory, RunComparison] | None:
    """``run_dir`` against the promoted baseline of ``eval_name`` (under ``runs_root``, by default
    the run's own folder): (baseline run id, its directory, the drift), None when never promoted.

    Raises :class:`FileNotFoundError` when the promoted baseline's folder is gone.
    """
    root = runs_root or run_dir.path.parent
    promoted = current_baseline(root, eval_name)
    if promoted is None:
        return None
    baseline_dir = RunDirectory(promoted.locate(root))
    if not baseline_dir.exists():
        raise FileNotFoundError(
            f"the promoted baseline of {eval_name!r} ({promoted.run_id}) is missing: no run.json in "
            f"{baseline_dir.path}; promote another run (`evalh promote runs/<run_id>`)"
        )
    return promoted.run_id, baseline_dir, drift_report(run_dir, baseline_dir)
