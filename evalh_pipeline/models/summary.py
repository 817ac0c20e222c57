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

    model_config = ConfigDict(use_attribute_docstrings=True)

    samples_per_case: int
    """How many samples each case was run for (`run.samples_per_case`)."""
    pass_at_k: dict[int, float]
    """pass@k by k: the chance that at least one of k samples of a case passes, averaged over the cases."""
    pass_hat_k: dict[int, float]
    """pass^k by k: the chance that all k samples of a case pass, averaged over the cases."""
    case_pass_fractions: dict[str, int]
    """How many cases passed in how many of their samples, keyed `passed/samples` (`3/5`)."""
    flaky_cases: list[str] = Field(default_factory=list)
    """The cases whose samples disagree (some passed, some not)."""


class VariantSummary(BaseModel):
    """Per-variant figures of one run."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    name: str
    """The variant's name."""
    cases_total: int
    """How many cases the variant ran."""
    cases_passed: int
    """How many cases passed (with several samples per case: every sample passed)."""
    cases_errored: int
    """How many cases had a sample that ended in an error (a timeout, an HTTP error, an exception...)."""
    pass_rate: float
    """`cases_passed` over the judged cases (`cases_total - cases_not_judged`), from 0 to 1."""
    avg_latency_ms: float
    """The mean latency of the variant's cells, in milliseconds."""
    avg_cost_usd: float | None = None
    """The mean cost of a cell, in US dollars; unset when no cell reported a cost."""
    avg_tokens_input: float | None = None
    """The mean input tokens of a cell; unset when no cell reported them."""
    avg_tokens_output: float | None = None
    """The mean output tokens of a cell; unset when no cell reported them."""
    # With run.samples_per_case > 1 the cases_* figures count cases (a case passes when all
    # of its samples passed) and these count the samples (cells).
    samples_total: int | None = None
    """How many samples (cells) ran; unset with one sample per case."""
    samples_passed: int | None = None
    """How many samples passed; unset with one sample per case."""
    samples_errored: int | None = None
    """How many samples ended in an error; unset with one sample per case."""
    repeats: RepeatStats | None = None
    """pass@k, pass^k and flaky cases; unset with one sample per case."""
    pass_rate_ci: list[float] | None = None
    """Wilson's 95% interval on `pass_rate`, `[low, high]`; with `run.cluster_by`, on the effective
    sample size (cases / `design_effect`).
    """
    clusters: int | None = None
    """With `run.cluster_by`: how many clusters the cases fall in; unset without it."""
    design_effect: float | None = None
    """With `run.cluster_by`: how much the clustering widens `pass_rate_ci` (1: not at all); unset
    without it.
    """
    cases_not_judged: int = 0
    """Cases left out of `cases_passed`, `pass_rate` and every comparison because a result that
    decides them could not be judged (the judge unreachable, rate limited or erroring).
    """


class RateWithInterval(BaseModel):
    """A proportion of ``n`` with its 95% Wilson interval."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    estimate: float
    """The proportion, from 0 to 1."""
    n: int
    """How many it is a proportion of."""
    ci_low: float
    """The low end of the 95% interval."""
    ci_high: float
    """The high end of the 95% interval."""


class CorrectedPassRate(BaseModel):
    """A pass rate corrected for the judge's error measured on human labels
    (stats/calibration.py: Rogan-Gladen, with an interval that carries the labels' uncertainty)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    estimate: float
    """The corrected pass rate (for a delta: the corrected difference, which may be negative)."""
    ci_low: float
    """The low end of the 95% interval."""
    ci_high: float
    """The high end of the 95% interval."""
    method: str
    """How it was corrected (`rogan_gladen_delta`, or `rogan_gladen_paired_delta` for a delta)."""
    judged: int
    """How many of the judge's own verdicts it was corrected from (results that errored left out)."""


class JudgeCalibration(BaseModel):
    """How an evaluator agrees with human labels, pooled over the labelled cells of every run
    of the eval judged with the same evaluator config (``evaluator_hash``)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    evaluator_hash: str
    """The hash of the evaluator config the labels were compared with."""
    labels: int
    """How many human labels were compared with the evaluator's verdicts."""
    agreement: float | None
    """The share of labelled cells where the evaluator and the human agree; unset without labels."""
    kappa: float | None
    """Cohen's kappa: agreement beyond chance (1 perfect, 0 no better than chance); unset without labels."""
    human_pass_rate: float | None
    """The share of labelled cells a human passed (kappa depends on it); unset without labels."""
    sensitivity: RateWithInterval | None
    """Of the cells a human passed, the share the evaluator passed too; unset when a human passed none."""
    specificity: RateWithInterval | None
    """Of the cells a human failed, the share the evaluator failed too; unset when a human failed none."""
    note: str | None = None
    """Why the pass rates are not corrected (too few labels, a judge no better than chance); unset
    when they are.
    """


class EvaluatorVariantRollup(BaseModel):
    """One evaluator's figures on one variant."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    pass_rate: float
    """The share of this evaluator's judged results on the variant that passed, from 0 to 1."""
    avg_score: float | None = None
    """The mean score of its results; unset when the evaluator gives no score."""
    errored: int = 0
    """Results where the evaluator itself failed (a judge unreachable, a command not found): they
    count as not passed, and are not a verdict on the system.
    """
    not_judged: int = 0
    """Of `errored`: results the evaluator could not judge (its judge unreachable), left out of
    `pass_rate` and the paired statistics.
    """
    pass_rate_corrected: CorrectedPassRate | None = None
    """`pass_rate` corrected for the judge's error measured on human labels; unset without enough
    labels (see `calibration`).
    """
    pass_rate_delta_corrected: CorrectedPassRate | None = None
    """This variant's pass rate minus the baseline variant's on the cases both were judged on,
    corrected for the judge's error; the estimate may be negative. Unset without enough labels or a
    baseline variant.
    """


class EvaluatorRollup(BaseModel):
    """One evaluator's figures on every variant."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    evaluator: str
    """The evaluator's name."""
    by_variant: dict[str, EvaluatorVariantRollup]
    """Its figures, keyed by variant name."""
    calibration: JudgeCalibration | None = None
    """How it agrees with human labels; unset when no human labelled its verdicts with this
    evaluator config.
    """


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

    model_config = ConfigDict(use_attribute_docstrings=True)

    cases_compared: int
    """How many cases both sides have (and were judged on)."""
    cases_worse: int
    """Of those, how many cases' pass fraction went down."""
    cases_better: int
    """Of those, how many cases' pass fraction went up."""
    pass_rate_delta: float
    """The mean per-case change of the pass fraction, from -1 to 1 (positive: better than the
    baseline).
    """
    delta_ci95: list[float] | None = None
    """The 95% interval of `pass_rate_delta`, `[low, high]`; unset when no case was compared."""
    mcnemar_p_value: float | None = None
    """The p-value of the McNemar test (see `test`) on the cases that got worse or better; unset
    when no case was compared.
    """
    alpha: float = 0.05
    """The significance level the comparison was judged at."""
    significant: bool = False
    """Whether the p-value is below `alpha`."""
    verdict: str = ""
    """The comparison in words."""
    test: Literal["mcnemar_exact", "mcnemar_clustered"] = "mcnemar_exact"
    """The test behind the p-value: exact McNemar, or the clustered McNemar test with
    `run.cluster_by`.
    """
    delta_ci_method: Literal["bootstrap", "cluster_bootstrap", "cluster_se", "tango"] | None = None
    """How `delta_ci95` was made: `bootstrap` (cases resampled), `cluster_bootstrap` (clusters
    resampled), `cluster_se` (cluster-robust standard error) or `tango` (Tango's score interval, when
    few cases moved); unset without an interval.
    """
    discordance: float | None = None
    """The mean squared per-case difference: with one sample per case, the share of cases that
    moved.
    """
    mde: float | None = None
    """The smallest change of the pass rate this comparison detects at 80% power and `alpha`."""
    clusters: int | None = None
    """With `run.cluster_by`: how many clusters were compared; unset without it."""
    design_effect: float | None = None
    """With `run.cluster_by`: how much the clustering widened the figures (1: not at all); unset
    without it.
    """
    p_value_adjusted: float | None = None
    """The p-value adjusted over its family (a comparison's per-evaluator table); unset when not
    adjusted.
    """
    adjustment: Literal["holm", "benjamini_hochberg"] | None = None
    """The adjustment behind `p_value_adjusted`; unset when not adjusted."""
    score_delta: float | None = None
    """The mean per-case change of the evaluator's score; unset when it gives no score."""
    score_delta_ci95: list[float] | None = None
    """The 95% interval of `score_delta`, `[low, high]`."""
    wilcoxon_p_value: float | None = None
    """Wilcoxon's signed-rank p-value for `score_delta`."""

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

    model_config = ConfigDict(use_attribute_docstrings=True)

    variant: str
    """The variant compared."""
    pass_rate_delta: float
    """Its pass rate minus the baseline's, from -1 to 1."""
    avg_latency_delta_ms: float
    """Its mean latency minus the baseline's, in milliseconds."""
    regressions: list[str] = Field(default_factory=list)
    """The ids of the cases that regressed."""
    improvements: list[str] = Field(default_factory=list)
    """The ids of the cases whose pass fraction went up."""
    significance: PairedStats | None = None
    """How much to believe the pass-rate change."""
    by_evaluator: dict[str, PairedStats] = Field(default_factory=dict)
    """The same statistics on each evaluator's verdicts, keyed by evaluator name."""


class ComparisonReport(BaseModel):
    """A comparison against a baseline variant (``ad_hoc``) or a promoted baseline run (``drift``)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    baseline: str
    """What the variants were compared against: the baseline variant's name, or the baseline run's id."""
    deltas: list[VariantDelta]
    """One entry per variant compared."""
    kind: Literal["ad_hoc", "drift"] = "ad_hoc"
    """`ad_hoc`: against a variant of the same run (`run.baseline_variant`); `drift`: against a
    promoted baseline run.
    """
    baseline_run_id: str | None = None
    """The promoted baseline run's id, for `drift`."""
    regressions_count: int | None = None
    """How many case regressions over every variant."""
    improvements_count: int | None = None
    """How many case improvements over every variant."""


class VariantCompleteness(BaseModel):
    """Cells one variant should have (cases x samples) and the traces it has."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    expected: int
    """How many cells the variant should have."""
    present: int
    """How many of them have a trace."""


class Completeness(BaseModel):
    """Whether every cell of the run has a trace: counted, never guessed.

    ``expected_cells`` comes from the run's own snapshot (cases.jsonl x the variants in
    run.json x ``run.samples_per_case`` in config.yaml), not from the eval.yaml on disk.
    """

    model_config = ConfigDict(use_attribute_docstrings=True)

    complete: bool
    """Whether every expected cell has a trace."""
    expected_cells: int
    """How many cells the run should have."""
    present_cells: int
    """How many of them have a trace."""
    by_variant: dict[str, VariantCompleteness] = Field(default_factory=dict)
    """The same counts, keyed by variant name."""

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

    model_config = ConfigDict(use_attribute_docstrings=True)

    results: int
    """How many results could not be judged."""
    by_evaluator: dict[str, int]
    """How many of them each evaluator has, keyed by evaluator name."""
    why: str
    """The first one's error, in words (the judge was unreachable, rate limited...)."""
    message: str
    """The first one's error message."""

    def describe(self) -> str:
        """``N results could not be judged (the judge was unreachable: ...)``."""
        return f"{self.results} result(s) could not be judged ({self.why}: {self.message})"


class RunSummary(BaseModel):
    """The aggregate of one run, written as ``summary.yaml``."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    schema_version: str = SCHEMA_VERSION
    """The record format's version (additive within 1.x)."""
    run_id: str
    """The run's id (its folder's name)."""
    started_at: datetime
    """When the run's first cell started."""
    finished_at: datetime
    """When the run's last cell finished."""
    config_path: str
    """The path of the eval.yaml the run was made from."""
    config_hash: str
    """The hash of the run's config, as in its `config_hash.txt`."""

    cases_total: int
    """How many cases the run has."""
    variants: list[VariantSummary]
    """Each variant's figures."""
    by_evaluator: list[EvaluatorRollup]
    """Each evaluator's figures."""
    comparison: ComparisonReport | None = None
    """The comparison against `run.baseline_variant`; unset without one."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """eval.yaml's `metadata`."""
    workspace: dict[str, Any] | None = None
    """Runs with a workspace: bytes copied, moved, deleted and leaked, and a mismatch message if
    gross; unset without a workspace.
    """
    completeness: Completeness | None = None
    """Expected cells (from the run's snapshot) against traces present; unset in older summaries."""
    reused_traces: int = 0
    """How many traces `evalh run --reuse` copied from earlier runs instead of calling the system."""
    reused_from: list[str] = Field(default_factory=list)
    """The ids of the runs the reused traces were first made in."""
    not_judged: NotJudged | None = None
    """Results whose evaluator could not judge; their cells are left out of the pass counts and
    comparisons (`cases_not_judged`). Unset when every result was judged.
    """
