"""RunSummary and its parts: the aggregate of one run, regenerable from traces + results."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalh_pipeline.models.versioning import SCHEMA_VERSION


class RepeatStats(BaseModel):
    """A variant's figures over several samples per case (``run.samples_per_case`` > 1).

    ``pass_at_k`` / ``pass_hat_k`` are the unbiased estimators (stats/repeats.py) at each
    reported k; ``case_pass_fractions`` counts cases by "passed/samples"; a flaky case's
    samples disagree.
    """

    samples_per_case: int
    pass_at_k: dict[int, float]
    pass_hat_k: dict[int, float]
    case_pass_fractions: dict[str, int]
    flaky_cases: list[str] = Field(default_factory=list)


class VariantSummary(BaseModel):
    """Per-variant figures of one run."""

    name: str
    cases_total: int
    cases_passed: int
    cases_errored: int
    pass_rate: float
    avg_latency_ms: float
    avg_cost_usd: float | None = None
    avg_tokens_input: float | None = None
    avg_tokens_output: float | None = None
    # With run.samples_per_case > 1 the cases_* figures count cases (a case passes when all
    # of its samples passed) and these count the samples (cells); None with one sample per case.
    samples_total: int | None = None
    samples_passed: int | None = None
    samples_errored: int | None = None
    repeats: RepeatStats | None = None
    # Wilson's 95% interval on pass_rate (stats/proportions.py); with run.cluster_by, on the
    # effective sample size (cases / design_effect over ``clusters`` clusters).
    pass_rate_ci: list[float] | None = None
    clusters: int | None = None
    design_effect: float | None = None
    # Cases left out of cases_passed, pass_rate and every comparison because a result that
    # decides them could not be judged (models/result.py NOT_JUDGED_ERRORS); pass_rate is
    # cases_passed over the judged cases (cases_total - cases_not_judged).
    cases_not_judged: int = 0


class RateWithInterval(BaseModel):
    """A proportion of ``n`` with its 95% Wilson interval."""

    estimate: float
    n: int
    ci_low: float
    ci_high: float


class CorrectedPassRate(BaseModel):
    """A pass rate corrected for the judge's error measured on human labels
    (stats/calibration.py: Rogan-Gladen, with an interval that carries the labels' uncertainty)."""

    estimate: float
    ci_low: float
    ci_high: float
    method: str
    # The judge's own verdicts it was corrected from (results that errored left out).
    judged: int


class JudgeCalibration(BaseModel):
    """How an evaluator agrees with human labels, pooled over the labelled cells of every run
    of the eval judged with the same evaluator config (``evaluator_hash``)."""

    evaluator_hash: str
    labels: int
    agreement: float | None
    kappa: float | None
    # The share of labelled cells a human passed (kappa depends on it).
    human_pass_rate: float | None
    sensitivity: RateWithInterval | None
    specificity: RateWithInterval | None
    # Why the pass rates are not corrected (too few labels, a judge no better than chance).
    note: str | None = None


class EvaluatorVariantRollup(BaseModel):
    """One evaluator's figures on one variant."""

    pass_rate: float
    avg_score: float | None = None
    # Results where the evaluator itself failed (a judge unreachable, a command not found):
    # they count as not passed, and are not a verdict on the system.
    errored: int = 0
    # Of ``errored``: results the evaluator could not judge (its judge unreachable), left out
    # of pass_rate and the paired statistics.
    not_judged: int = 0
    # Set when the evaluator has enough human labels (JudgeCalibration).
    pass_rate_corrected: CorrectedPassRate | None = None
    # This variant's pass rate minus the baseline variant's on the cases both were judged on,
    # corrected for the judge's error (stats/calibration.py); the estimate may be negative.
    pass_rate_delta_corrected: CorrectedPassRate | None = None


class EvaluatorRollup(BaseModel):
    """One evaluator's figures on every variant."""

    evaluator: str
    by_variant: dict[str, EvaluatorVariantRollup]
    # None: no human label of this evaluator's verdicts in this run's config.
    calibration: JudgeCalibration | None = None


class PairedStats(BaseModel):
    """How much to believe a pass-rate change (stats/paired.py ``compare_paired``).

    Over the cases both sides have: ``pass_rate_delta`` is the mean per-case change of the
    pass fraction, ``delta_ci95`` its paired-bootstrap 95% interval, ``mcnemar_p_value``
    the exact McNemar (sign) test on the cases that got worse / better; ``significant`` is
    judged at ``alpha`` and ``verdict`` says it in words.

    ``delta_ci_method`` says how ``delta_ci95`` was made: ``bootstrap`` (cases resampled),
    ``cluster_bootstrap`` (with ``run.cluster_by``: whole clusters resampled; ``cluster_se``:
    the normal interval of the cluster-robust standard error, above 256 kinds of cluster) or ``tango``
    (Tango's score interval, where fewer than 10 cases moved and a bootstrap interval is
    too narrow or collapses). With ``run.cluster_by`` the p-value is the clustered McNemar
    test (``test``), and ``clusters`` / ``design_effect`` say how much the clustering
    widened the figures. ``mde`` is the smallest change this comparison detects at 80%
    power and ``alpha`` (from ``discordance``, the mean squared per-case difference: the
    share of cases that moved, with one sample per case). ``p_value_adjusted`` is the
    p-value adjusted over its family (``adjustment``: Benjamini-Hochberg over a
    comparison's per-evaluator table). ``score_*``: the same cases' mean evaluator score,
    its delta with a 95% interval (cluster-robust standard error) and Wilcoxon's signed-rank p-value.
    """

    cases_compared: int
    cases_worse: int
    cases_better: int
    pass_rate_delta: float
    delta_ci95: list[float] | None = None
    mcnemar_p_value: float | None = None
    alpha: float = 0.05
    significant: bool = False
    verdict: str = ""
    test: Literal["mcnemar_exact", "mcnemar_clustered"] = "mcnemar_exact"
    delta_ci_method: Literal["bootstrap", "cluster_bootstrap", "cluster_se", "tango"] | None = None
    discordance: float | None = None
    mde: float | None = None
    clusters: int | None = None
    design_effect: float | None = None
    p_value_adjusted: float | None = None
    adjustment: Literal["holm", "benjamini_hochberg"] | None = None
    score_delta: float | None = None
    score_delta_ci95: list[float] | None = None
    wilcoxon_p_value: float | None = None

    @property
    def significant_regression(self) -> bool:
        return self.significant and self.cases_worse > self.cases_better

    def regression_at(self, alpha: float) -> bool:
        """Whether this is a regression significant at ``alpha`` (more worse than better cases, p < alpha)."""
        return (self.mcnemar_p_value is not None and self.mcnemar_p_value < alpha
                and self.cases_worse > self.cases_better)


class VariantDelta(BaseModel):
    """How one variant moved against the baseline: positive deltas mean higher than baseline.

    A case regressed when its pass fraction went down (with one sample: passed, then not).
    """

    variant: str
    pass_rate_delta: float
    avg_latency_delta_ms: float
    regressions: list[str] = Field(default_factory=list)
    improvements: list[str] = Field(default_factory=list)
    significance: PairedStats | None = None
    by_evaluator: dict[str, PairedStats] = Field(default_factory=dict)


class ComparisonReport(BaseModel):
    """A comparison against a baseline variant (``ad_hoc``) or a promoted baseline run (``drift``)."""

    baseline: str
    deltas: list[VariantDelta]
    kind: Literal["ad_hoc", "drift"] = "ad_hoc"
    baseline_run_id: str | None = None
    regressions_count: int | None = None
    improvements_count: int | None = None


class VariantCompleteness(BaseModel):
    """Cells one variant should have (cases x samples) and the traces it has."""

    expected: int
    present: int


class Completeness(BaseModel):
    """Whether every cell of the run has a trace: counted, never guessed.

    ``expected_cells`` comes from the run's own snapshot (cases.jsonl x the variants in
    run.json x ``run.samples_per_case`` in config.yaml), not from the eval.yaml on disk.
    """

    complete: bool
    expected_cells: int
    present_cells: int
    by_variant: dict[str, VariantCompleteness] = Field(default_factory=dict)

    @property
    def missing_variants(self) -> list[str]:
        """Variants of the run without a single trace."""
        return [name for name, c in self.by_variant.items() if c.expected and not c.present]

    def describe(self) -> str:
        """One line: complete, or which variants are short of how many cells."""
        if self.complete:
            return f"complete: {self.present_cells}/{self.expected_cells} cells have a trace"
        short = ", ".join(f"{name} {c.present}/{c.expected}" for name, c in self.by_variant.items()
                          if c.present < c.expected)
        return (f"incomplete: {self.present_cells}/{self.expected_cells} cells have a trace "
                f"(missing in {short})")


class NotJudged(BaseModel):
    """Results of a run that could not be judged (models/result.py NOT_JUDGED_ERRORS): how
    many, of which evaluators, and the first one's error (``why`` in words)."""

    results: int
    by_evaluator: dict[str, int]
    why: str
    message: str

    def describe(self) -> str:
        """``N results could not be judged (the judge was unreachable: ...)``."""
        return f"{self.results} result(s) could not be judged ({self.why}: {self.message})"


class RunSummary(BaseModel):
    """The aggregate of one run, written as ``summary.yaml``."""

    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    run_id: str
    started_at: datetime
    finished_at: datetime
    config_path: str
    config_hash: str

    cases_total: int
    variants: list[VariantSummary]
    by_evaluator: list[EvaluatorRollup]
    comparison: ComparisonReport | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Runs with a workspace: bytes copied/moved/deleted/leaked and a mismatch message (if gross).
    workspace: dict[str, Any] | None = None
    # Expected cells (from the run's snapshot) against traces present; None for old summaries.
    completeness: Completeness | None = None
    # `evalh run --reuse`: traces copied from earlier runs instead of calling the system, and
    # the runs they were first made in.
    reused_traces: int = 0
    reused_from: list[str] = Field(default_factory=list)
    # Results whose evaluator could not judge (None: every result was judged); their cells
    # are left out of the pass counts and comparisons (VariantSummary.cases_not_judged).
    not_judged: NotJudged | None = None
