"""Judge calibration in a run's summary: each evaluator's agreement with the eval's human
labels, and each variant's pass rate corrected for the judge's error (stats/calibration.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from evalh_pipeline.models import RunSummary
from evalh_pipeline.models.summary import CorrectedPassRate, JudgeCalibration, RateWithInterval
from evalh_pipeline.queries.labelled_cells import confusion_by_evaluator, eval_runs, judged_cells
from evalh_pipeline.stats.calibration import (
    ConfusionCounts,
    Rate,
    agreement,
    cohens_kappa,
    corrected_paired_delta,
    correction_refusal,
    rogan_gladen,
    sensitivity,
    specificity,
)
from evalh_pipeline.store.labels import labels_path, read_labels
from evalh_pipeline.store.run_dir import RunDirectory


def _interval(rate: Rate | None) -> RateWithInterval | None:
    return None if rate is None else RateWithInterval(estimate=rate.estimate, n=rate.n, ci_low=rate.ci_low,
                                                      ci_high=rate.ci_high)


def judge_calibration(counts: ConfusionCounts, evaluator_hash: str) -> JudgeCalibration:
    """The calibration figures of one evaluator config from its labelled cells."""
    return JudgeCalibration(
        evaluator_hash=evaluator_hash, labels=counts.total, agreement=agreement(counts), kappa=cohens_kappa(counts),
        human_pass_rate=counts.human_passed / counts.total if counts.total else None,
        sensitivity=_interval(sensitivity(counts)), specificity=_interval(specificity(counts)),
        note=correction_refusal(counts))


def add_calibration(summary: RunSummary, run_dir: RunDirectory, runs_root: Path, eval_name: str) -> RunSummary:
    """``summary`` with each labelled evaluator's calibration and corrected pass rates (the
    summary unchanged when the eval has no labels)."""
    if not labels_path(runs_root, eval_name).exists():
        return summary
    labels = read_labels(runs_root, eval_name)
    here = judged_cells(run_dir)
    cells = [c for run in eval_runs(runs_root, eval_name) if run.path != run_dir.path for c in judged_cells(run)]
    confusion = confusion_by_evaluator(cells + here, labels)
    for rollup in summary.by_evaluator:
        mine = [c for c in here if c.evaluator == rollup.evaluator]
        if not mine:
            continue
        # The config that judged most of this run's cells (one, unless re-judging was partial).
        config = Counter(c.evaluator_hash for c in mine).most_common(1)[0][0]
        counts = confusion.get((rollup.evaluator, config))
        if counts is None:
            continue
        rollup.calibration = judge_calibration(counts, config)
        by_cell = {(c.variant_name, c.case_id, c.sample): c.passed for c in mine if c.evaluator_hash == config}
        baseline = summary.comparison.baseline if summary.comparison is not None else None
        for variant, figures in rollup.by_variant.items():
            verdicts = [c.passed for c in mine if c.variant_name == variant and c.evaluator_hash == config]
            corrected = rogan_gladen(sum(verdicts), len(verdicts), counts)
            if corrected is not None:
                figures.pass_rate_corrected = CorrectedPassRate(
                    estimate=corrected.estimate, ci_low=corrected.ci_low, ci_high=corrected.ci_high,
                    method=corrected.method, judged=len(verdicts))
            if baseline is None or variant == baseline:
                continue
            # Paired by cell: the cases (and samples) both variants were judged on.
            pairs = [(by_cell[(baseline, case, sample)], passed) for (name, case, sample), passed in by_cell.items()
                     if name == variant and (baseline, case, sample) in by_cell]
            delta = corrected_paired_delta(pairs, counts)
            if delta is not None:
                figures.pass_rate_delta_corrected = CorrectedPassRate(
                    estimate=delta.estimate, ci_low=delta.ci_low, ci_high=delta.ci_high, method=delta.method,
                    judged=len(pairs))
    return summary
