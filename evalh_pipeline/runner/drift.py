"""The drift stage: a run against its eval's promoted baseline, written to the run directory.

``drift.yaml`` holds the comparison (``kind: drift``) and ``drift.md`` the report with the
regressions first; both are written atomically and are regenerable. An eval without a
promoted baseline is not a failure: the files say so and there is nothing to gate.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh_pipeline.queries.compare import RunComparison
from evalh_pipeline.queries.drift import promoted_drift
from evalh_pipeline.queries.evaluator_configs import rejudge_command
from evalh_pipeline.queries.report import drift_markdown
from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic
from evalh_pipeline.common.yaml_files import dump_yaml, load_yaml_text

COMPARED = "compared"
NO_BASELINE = "no_baseline"


@dataclass(frozen=True)
class RunDrift:
    """The outcome of the drift stage for one run."""

    run_id: str
    baseline_run_id: str | None
    comparison: RunComparison | None  # None: no promoted baseline
    markdown: str
    # When evaluator configs differ: the command that re-judges the baseline with today's evaluators.
    rejudge_baseline: str | None = None

    @property
    def status(self) -> str:
        return COMPARED if self.comparison is not None else NO_BASELINE

    @property
    def regressions_count(self) -> int:
        return (self.comparison.comparison.regressions_count or 0) if self.comparison else 0

    @property
    def improvements_count(self) -> int:
        return (self.comparison.comparison.improvements_count or 0) if self.comparison else 0

    def pass_rate_deltas(self) -> dict[str, float]:
        """Variant -> pass rate of the run minus the baseline's (variants both runs have)."""
        return {v.variant: v.pass_rate_delta for v in self.comparison.variants} if self.comparison else {}


def write_drift(eval_name: str, run_dir: RunDirectory, runs_root: Path | None = None) -> RunDrift:
    """Compare ``run_dir`` with the promoted baseline of ``eval_name`` (under ``runs_root``, by
    default the run's own folder) and write drift.yaml and drift.md."""
    with locked(run_dir.lock):
        return _write_drift(eval_name, run_dir, runs_root)


def _write_drift(eval_name: str, run_dir: RunDirectory, runs_root: Path | None) -> RunDrift:
    drift = compute_drift(eval_name, run_dir, runs_root)
    record: dict[str, Any] = {
        "run_id": drift.run_id,
        "eval_name": eval_name,
        "status": drift.status,
        "baseline_run_id": drift.baseline_run_id,
        "regressions_count": drift.regressions_count,
        "improvements_count": drift.improvements_count,
        "rejudge_baseline": drift.rejudge_baseline,
        "comparison": drift.comparison.to_dict() if drift.comparison else None,
    }
    write_atomic(run_dir.drift, dump_yaml(record))
    write_atomic(run_dir.drift_report, drift.markdown)
    return drift


def compute_drift(eval_name: str, run_dir: RunDirectory, runs_root: Path | None = None) -> RunDrift:
    """The drift of ``run_dir`` against the promoted baseline, computed without writing anything."""
    promoted = promoted_drift(eval_name, run_dir, runs_root)
    baseline_run_id, baseline_dir, comparison = promoted if promoted is not None else (None, None, None)
    rejudge = (rejudge_command(baseline_dir, run_dir)
               if baseline_dir is not None and comparison is not None and comparison.evaluator_changes else None)
    drift = RunDrift(
        run_id=run_dir.run_id,
        baseline_run_id=baseline_run_id,
        comparison=comparison,
        markdown=drift_markdown(eval_name, run_dir.run_id, comparison, rejudge, shlex.quote(str(run_dir.path))),
        rejudge_baseline=rejudge,
    )
    return drift


def load_drift(run_dir: RunDirectory) -> dict[str, Any]:
    """drift.yaml as written by :func:`write_drift`."""
    drift: dict[str, Any] = load_yaml_text(run_dir.drift.read_text(encoding="utf-8"))
    return drift
