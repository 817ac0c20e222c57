"""Judging one trace: build the eval's evaluators, run each on a trace, count the verdicts.

An evaluator that raises fails its own result only; cells the runner never started
(``UNJUDGED_ERRORS``) get no results at all.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from evalh_pipeline.common.ratelimits import RateLimits
from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorContext, SyncEvaluator
from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.models import EvalCase, EvaluationResult, FilesystemArtifact, Trace
from evalh_pipeline.runner.case_evaluators import CaseEvaluatorGroup, case_evaluator_hashes, for_case
from evalh_pipeline.runner.hashes import evaluator_hash
from evalh_pipeline.runner.result_lines import Judged, build_result, raised
from evalh_pipeline.store.run_dir import runs_cache_dir

# Cells the runner never started have nothing to judge.
UNJUDGED_ERRORS = frozenset({"cost_limit"})


@dataclass
class EvaluationStats:
    traces: int = 0
    results: int = 0
    evaluator_errors: int = 0
    # variant -> evaluator -> [passed, judged]
    by_variant: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    # Incremental re-evaluation: result lines kept as they were, evaluators re-judged on
    # every trace, and traces judged because some evaluator had no current result for them
    # (appended by a resume, or changed).
    results_kept: int = 0
    evaluators_rejudged: list[str] = field(default_factory=list)
    traces_appended: int = 0

    def count(self, result: EvaluationResult) -> None:
        self.tally(result.variant_name, result.evaluator, result.passed, result.error is not None)

    def tally(self, variant: str, evaluator: str, passed: bool, errored: bool) -> None:
        self.results += 1
        self.evaluator_errors += errored
        tally = self.by_variant.setdefault(variant, {}).setdefault(evaluator, [0, 0])
        tally[0] += passed
        tally[1] += 1

    def merge(self, other: "EvaluationStats") -> None:
        """Add the counts of ``other`` (a worker's share) to these."""
        self.traces += other.traces
        self.results += other.results
        self.evaluator_errors += other.evaluator_errors
        for variant, by_evaluator in other.by_variant.items():
            mine = self.by_variant.setdefault(variant, {})
            for evaluator, (passed, judged) in by_evaluator.items():
                tally = mine.setdefault(evaluator, [0, 0])
                tally[0] += passed
                tally[1] += judged


def evaluators_fingerprint(spec: EvalSpec) -> str:
    """A hash of everything that decides verdicts: evaluator configs and pass criteria."""
    body = json.dumps({"evaluators": spec.raw["evaluators"], "pass_criteria": spec.raw["pass_criteria"]},
                      sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def build_evaluators(spec: EvalSpec, only: list[str] | None = None, *,
                     rate_limits: RateLimits | None = None, cases: Path | None = None) -> list[Evaluator]:
    """Instantiate the eval's evaluators (all, or the named ones); their judges meet
    ``rate_limits`` (the stage's, shared with its systems). With ``cases`` (a run's cases
    snapshot), the case evaluators its cases carry follow, one group per name
    (runner/case_evaluators.py)."""
    selected = [e for e in spec.config.evaluators if only is None or e.name in only]
    case_hashes = case_evaluator_hashes(cases, spec.secret_values) if cases is not None else {}
    groups = [name for name in case_hashes if only is None or name in only]
    missing = set(only or []) - {e.name for e in selected} - set(groups)
    if missing:
        raise ValueError(f"no evaluator named {', '.join(sorted(missing))} in {spec.path.name} or its cases")
    context = evaluator_context(spec, rate_limits)
    hashes = evaluator_hashes(spec)
    evaluators: list[Evaluator] = []
    for e in selected:
        evaluator = EVALUATORS.get(e.type)(e.name, e.type, e.config, context)
        # Recorded in each result (evaluator_hash): re-evaluation re-judges only what changed.
        evaluator.config_hash = hashes[e.name]
        evaluators.append(evaluator)
    evaluators += [CaseEvaluatorGroup(name, case_hashes[name], context) for name in groups]
    return evaluators


def evaluator_hashes(spec: EvalSpec) -> dict[str, str]:
    """Evaluator name -> the hash of its config (runner/hashes.py)."""
    return {e.name: evaluator_hash(e.name, e.type, e.config, spec.secret_values) for e in spec.config.evaluators}


def evaluator_context(spec: EvalSpec, rate_limits: RateLimits | None = None) -> EvaluatorContext:
    """The context every evaluator of ``spec`` is built with."""
    return EvaluatorContext(
        eval_dir=spec.eval_dir,
        env=dict(spec.settings.env),
        secret_values=spec.secret_values,
        cache_dir=runs_cache_dir(spec.runs_root) if "://" not in str(spec.runs_root) else None,
        max_concurrency=spec.config.run.max_concurrency,
        rate_limits=rate_limits,
    )


def count_judged(stats: EvaluationStats, trace: Trace, judged: list[Judged]) -> None:
    """Add one trace's judgements to ``stats``."""
    for j in judged:
        stats.tally(trace.variant_name, j.evaluator.name, j.verdict.passed and j.error is None, j.error is not None)
    stats.traces += 1



async def judge_trace(
    evaluators: list[Evaluator], case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None = None
) -> list[EvaluationResult]:
    """Every evaluator's result for one trace; cells that never ran get none."""
    return [build_result(trace, j) for j in await judge_all(evaluators, case, trace, artifact)]


async def judge_all(
    evaluators: list[Evaluator], case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None
) -> list[Judged]:
    """Every evaluator's judgement of one trace, in order (none for a cell that never ran);
    a case evaluator judges with the config of ``case`` (none when the case has none)."""
    if trace.error is not None and trace.error.type in UNJUDGED_ERRORS:
        return []
    # A case evaluator judges the cases that have it only (its case's own config).
    chosen = [found for found in (for_case(evaluator, case) for evaluator in evaluators) if found is not None]
    # A sync evaluator is judged by a plain call: no coroutine per verdict.
    return [judge_sync(evaluator, case, trace, artifact) if isinstance(evaluator, SyncEvaluator)
            else await judge_one(evaluator, case, trace, artifact) for evaluator in chosen]


async def judge_one(evaluator: Evaluator, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Judged:
    """One evaluator's judgement of one trace, timed; what it raises becomes a failing verdict."""
    if isinstance(evaluator, SyncEvaluator):
        return judge_sync(evaluator, case, trace, artifact)  # no event-loop round trip
    started = datetime.now(timezone.utc)
    error = None
    try:
        verdict = await evaluator.evaluate(case, trace, artifact)
    except Exception as exc:  # noqa: BLE001 - one evaluator failing never stops the others
        verdict, error = raised(evaluator, exc)
    return Judged(evaluator, verdict, error, started, datetime.now(timezone.utc))


def judge_sync(evaluator: SyncEvaluator, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Judged:
    """:func:`judge_one` of an evaluator that does no I/O, without a coroutine."""
    started = datetime.now(timezone.utc)
    error = None
    try:
        verdict = evaluator.evaluate_sync(case, trace, artifact)
    except Exception as exc:  # noqa: BLE001 - one evaluator failing never stops the others
        verdict, error = raised(evaluator, exc)
    return Judged(evaluator, verdict, error, started, datetime.now(timezone.utc))
