"""Judge calibration in a run's summary: each evaluator's agreement with the eval's human
labels, and each variant's pass rate corrected for the judge's error (stats/calibration.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from evalh_pipeline.models import RunSummary
from evalh_pipeline.models.summary import CorrectedPassRate, JudgeCalibration, RateWithInterval
from evalh_pipeline.queries.labelled_cells import confusion_by_evaluator, judged_cells, label_verdicts
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


@dataclass(frozen=True)
class VariantCorrection:
    """One variant's verdicts by one evaluator config, and its pass rate corrected with the labels."""

    passed: int
    judged: int
    corrected: CorrectedPassRate | None
    # Against the baseline variant, paired by case and sample (None for the baseline itself).
    delta: CorrectedPassRate | None


@dataclass(frozen=True)
class EvaluatorCalibration:
    """One evaluator's calibration on the labels and its corrected pass rates in one run."""

    calibration: JudgeCalibration
    by_variant: dict[str, VariantCorrection]


def run_calibration(run_dir: RunDirectory, runs_root: Path, eval_name: str, baseline: str | None,
                    ) -> dict[str, EvaluatorCalibration]:
    """Evaluator -> its calibration and corrected rates in ``run_dir``, for each evaluator
    whose config has labels (empty when the eval has none).

    The labels are read once; the judge's verdict on each labelled content is this run's when
    the run has that content, else the one in the run the label was given on (only that
    run's results are read: queries/labelled_cells.py ``label_verdicts``)."""
    if not labels_path(runs_root, eval_name).exists():
        return {}
    labels = read_labels(runs_root, eval_name)
    if not labels:
        return {}
    here = judged_cells(run_dir)
    elsewhere = label_verdicts(runs_root, labels, {c.key for c in here})
    confusion = confusion_by_evaluator(elsewhere + here, labels)
    found: dict[str, EvaluatorCalibration] = {}
    for evaluator in dict.fromkeys(c.evaluator for c in here):
        mine = [c for c in here if c.evaluator == evaluator]
        # The config that judged most of this run's cells (one, unless re-judging was partial).
        config = Counter(c.evaluator_hash for c in mine).most_common(1)[0][0]
        counts = confusion.get((evaluator, config))
        if counts is None:
            continue
        by_cell = {(c.variant_name, c.case_id, c.sample): c.passed for c in mine if c.evaluator_hash == config}
        by_variant = {}
        for variant in dict.fromkeys(name for name, *_ in by_cell):
            verdicts = [passed for (name, *_), passed in by_cell.items() if name == variant]
            corrected = rogan_gladen(sum(verdicts), len(verdicts), counts)
            delta = None
            if baseline is not None and variant != baseline:
                # Paired by cell: the cases (and samples) both variants were judged on.
                pairs = [(by_cell[(baseline, case, sample)], passed)
                         for (name, case, sample), passed in by_cell.items()
                         if name == variant and (baseline, case, sample) in by_cell]
                paired = corrected_paired_delta(pairs, counts)
                if paired is not None:
                    delta = CorrectedPassRate(estimate=paired.estimate, ci_low=paired.ci_low, ci_high=paired.ci_high,
                                              method=paired.method, judged=len(pairs))
            by_variant[variant] = VariantCorrection(
                passed=sum(verdicts), judged=len(verdicts), delta=delta,
                corrected=None if corrected is None else CorrectedPassRate(
                    estimate=corrected.estimate, ci_low=corrected.ci_low, ci_high=corrected.ci_high,
                    method=corrected.method, judged=len(verdicts)))
        found[evaluator] = EvaluatorCalibration(judge_calibration(counts, config), by_variant)
    return found


def add_calibration(summary: RunSummary, run_dir: RunDirectory, runs_root: Path, eval_name: str) -> RunSummary:
    """``summary`` with each labelled evaluator's calibration and corrected pass rates (the
    summary unchanged when the eval has no labels)."""
    baseline = summary.comparison.baseline if summary.comparison is not None else None
    calibrations = run_calibration(run_dir, runs_root, eval_name, baseline)
    for rollup in summary.by_evaluator:
        found = calibrations.get(rollup.evaluator)
        if found is None:
            continue
        rollup.calibration = found.calibration
        for variant, figures in rollup.by_variant.items():
            correction = found.by_variant.get(variant)
            if correction is not None:
                figures.pass_rate_corrected = correction.corrected
                figures.pass_rate_delta_corrected = correction.delta
    return summary
