"""Judge persisted traces: every evaluator on every trace, results replaced per variant.

Reads only the run directory (cases snapshot + traces), never the system under test, so
re-evaluation is cheap and repeatable. An evaluator that raises fails its own result only.

When every evaluator is a :class:`SyncEvaluator` (no I/O), traces are judged in a plain
loop, in worker processes for a large traces file (runner/judge_workers.py). Evaluators
that do I/O (judges) run in the async pool under the run's concurrency knob. Results
staged during a fresh run are adopted when they still apply (runner/inline_results.py).
"""

from __future__ import annotations

from pathlib import Path

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.evaluators.base import Evaluator, SyncEvaluator
from evalh_pipeline.models import Trace
from evalh_pipeline.runner.inline_results import adopt_inline_results
from evalh_pipeline.runner.judge_workers import SpanPlan, judge_in_processes, process_count
from evalh_pipeline.runner.judging import (
    UNJUDGED_ERRORS,
    EvaluationStats,
    build_evaluators,
    count_judged,
    evaluators_fingerprint,
    judge_all,
    judge_trace,
    slices_of,
)
from evalh_pipeline.runner.pool import run_bounded
from evalh_pipeline.runner.progress import NoProgress, Progress
from evalh_pipeline.runner.result_lines import result_lines
from evalh_pipeline.store.case_index import CaseIndex
from evalh_pipeline.store.locking import under_run_lock
from evalh_pipeline.store.records import TRACES
from evalh_pipeline.store.results_file import replace_results
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.workspaces.artifacts import ArtifactLoader

# The names callers import from here.
__all__ = ["EvaluationStats", "build_evaluators", "evaluate_traces", "evaluators_fingerprint", "judge_trace"]


@under_run_lock
async def evaluate_traces(
    spec: EvalSpec,
    run_dir: RunDirectory,
    variant_names: list[str] | None = None,
    *,
    evaluator_names: list[str] | None = None,
    max_concurrency: int | None = None,
    progress: Progress | None = None,
    processes: int | None = None,
) -> EvaluationStats:
    """(Re)judge the traces of ``variant_names``; their old results are replaced whole.

    ``processes`` caps the worker processes used when every evaluator is synchronous
    (default: one per CPU, fewer for a small traces file; 1 judges in this process only).
    """
    progress = progress or NoProgress()
    evaluators = build_evaluators(spec, evaluator_names)
    variants = set(variant_names if variant_names is not None else spec.variant_names)
    concurrency = max_concurrency or spec.config.run.max_concurrency
    stats = EvaluationStats()
    if evaluator_names is None and adopt_inline_results(run_dir, sorted(variants), evaluators_fingerprint(spec), stats):
        return stats
    cases = CaseIndex(run_dir.cases)
    artifacts = ArtifactLoader(spec, run_dir)
    parts: list[Path] = []
    progress.start("results", None)
    try:
        if all(isinstance(e, SyncEvaluator) for e in evaluators):
            plan = SpanPlan(evaluators, cases, run_dir.traces, variants, artifacts)
            parts = judge_in_processes(plan, run_dir, process_count(run_dir.traces, processes), stats, progress)
        else:
            parts = [run_dir.temp_file("results")]
            await _judge_async(evaluators, cases, artifacts, run_dir.traces, variants, parts[0], concurrency, stats,
                               progress)
        selected = {e.name for e in evaluators} if evaluator_names is not None else None
        replace_results(run_dir, parts, variants, selected, slices_of(stats.by_variant))
    finally:
        for part in parts:
            part.unlink(missing_ok=True)
        cases.close()
    progress.finish("results")
    return stats


async def _judge_async(
    evaluators: list[Evaluator], cases: CaseIndex, artifacts: ArtifactLoader, traces_path: Path, variants: set[str],
    out_path: Path, concurrency: int, stats: EvaluationStats, progress: Progress,
) -> None:
    # A temp file published by rename: no need for the per-line durability of traces.
    with out_path.open("wb", buffering=1 << 20) as out:
        async def judge(trace: Trace) -> None:
            artifact = artifacts.get(trace.case_id, trace.variant_name, trace.sample)
            judged = await judge_all(evaluators, cases.get(trace.case_id), trace, artifact)
            out.write(result_lines(trace, judged))
            count_judged(stats, trace, judged)
            progress.advance("results")

        traces = (
            t for t in TRACES.iter_file(traces_path)
            if t.variant_name in variants and not (t.error and t.error.type in UNJUDGED_ERRORS)
        )
        await run_bounded(traces, judge, concurrency)
