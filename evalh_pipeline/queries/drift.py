"""Drift: a run compared with its eval's promoted baseline run."""

from __future__ import annotations

from dataclasses import replace

from evalh_pipeline.queries.compare import RunComparison, compare_runs
from evalh_pipeline.store.run_dir import RunDirectory


def drift_report(run_dir: RunDirectory, baseline_dir: RunDirectory) -> RunComparison:
    """``run_dir`` against ``baseline_dir``, reported as a ``kind: drift`` comparison."""
    report = compare_runs(baseline_dir, run_dir)
    comparison = report.comparison.model_copy(update={"kind": "drift", "baseline_run_id": baseline_dir.run_id})
    return replace(report, comparison=comparison)
