"""Judge persisted traces: every evaluator on every trace, results replaced per variant.

Reads only the run directory (cases snapshot + traces), never the system under test, so
re-evaluation is cheap and repeatable. An evaluator that raises fails its own result only.

When every evaluator is a :class:`SyncEvaluator` (no I/O), traces are judged in a plain
loop, in worker processes for a large traces file (runner/judge_workers.py). Evaluators
that do I/O (judges) run in the async pool under the run's concurrency knob. Results
staged during a fresh run are adopted when they still apply (runner/inline_results.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.evaluators.base import Evaluator, SyncEvaluator
from evalh_pipeline.models import Trace
from evalh_pipeline.runner.inline_results import adopt_inline_results
from evalh_pipeline.runner.judge_workers import Part, SpanPlan, judge_in_processes, judge_one_span, process_count
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
from evalh_pipeline.store.jsonl import LineSpan
from evalh_pipeline.store.result_slices import Judgement, Slice, recorded_judgements, traces_identity
from evalh_pipeline.store.results_file import KeptLines, copy_kept_results, replace_results
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic
from evalh_pipeline.workspaces.artifacts import ArtifactLoader

# The names callers import from here.
__all__ = ["EvaluationStats", "build_evaluators", "evaluate_traces", "evaluators_fingerprint", "judge_trace",
           "last_evaluation"]


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
    incremental: bool = True,
) -> EvaluationStats:
    """(Re)judge the traces of ``variant_names``.

    By default only what changed is judged: evaluators whose config hash differs from the
    one their results were judged with are re-judged on every trace, the others only on
    traces appended since, and results of evaluators no longer configured are dropped;
    every other result line is kept byte for byte (``stats.results_kept``). When how the
    results were judged is not known (no manifest, or results.jsonl written by another
    tool), or with ``incremental=False``, every result of the variants is replaced.
    ``evaluator_names`` re-judges exactly those evaluators on every trace.

    ``processes`` caps the worker processes used when every evaluator is synchronous
    (default: one per CPU, fewer for a small traces file; 1 judges in this process only).
    """
    progress = progress or NoProgress()
    evaluators = build_evaluators(spec, evaluator_names)
    variants = set(variant_names if variant_names is not None else spec.variant_names)
    stats = EvaluationStats()
    await _evaluate(spec, run_dir, evaluators, variants, stats, evaluator_names=evaluator_names,
                    concurrency=max_concurrency or spec.config.run.max_concurrency, progress=progress,
                    processes=processes, incremental=incremental)
    write_atomic(run_dir.last_evaluation, json.dumps(asdict(stats)))
    return stats


def last_evaluation(run_dir: RunDirectory) -> dict[str, Any] | None:
    """The counts of the run's last evaluation (EvaluationStats as a dict), if recorded."""
    try:
        loaded: dict[str, Any] = json.loads(run_dir.last_evaluation.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return loaded


async def _evaluate(
    spec: EvalSpec, run_dir: RunDirectory, evaluators: list[Evaluator], variants: set[str], stats: EvaluationStats, *,
    evaluator_names: list[str] | None, concurrency: int, progress: Progress, processes: int | None, incremental: bool,
) -> None:
    hashes = {e.name: e.config_hash for e in evaluators}
    if evaluator_names is None and adopt_inline_results(
            run_dir, sorted(variants), evaluators_fingerprint(spec), stats, hashes):
        return
    before = traces_identity(run_dir.traces)
    recorded = recorded_judgements(run_dir)
    plan = _Rejudging(full=list(evaluators), drop=set(hashes) if evaluator_names is not None else None)
    if evaluator_names is None and incremental and recorded is not None and before is not None:
        plan = _plan_rejudging(evaluators, variants, recorded, before, run_dir.traces)
    stats.evaluators_rejudged = sorted(e.name for e in plan.full)
    kept = plan.kept(recorded or {}, variants)
    stats.results_kept = sum(j.results for j in kept.values())
    if plan.nothing_to_do():
        return
    cases = CaseIndex(run_dir.cases)
    artifacts = ArtifactLoader(spec, run_dir)
    parts: list[Part] = []
    # The old lines kept are copied while the traces are judged (neither reads what the other
    # writes, and the run's lock is held throughout): with one evaluator of five changed, the
    # copy is as long as the judging.
    keeping = _Background(lambda: copy_kept_results(run_dir, variants, plan.drop))
    progress.start("results", None)
    try:
        full_stats = EvaluationStats()
        if plan.full:
            parts += await _judge(plan.full, None, cases, artifacts, run_dir, variants, concurrency, processes,
                                  full_stats, progress, keeping.start)
        tail_stats = EvaluationStats()
        if plan.tail:
            parts += await _judge(plan.tail, plan.tail_span, cases, artifacts, run_dir, variants, concurrency,
                                  processes, tail_stats, progress, keeping.start)
        for part_stats in (full_stats, tail_stats):
            stats.merge(part_stats)
        stats.traces = max(full_stats.traces, tail_stats.traces)
        stats.traces_appended = tail_stats.traces
        judged = dict(kept)
        if before is not None and traces_identity(run_dir.traces) == before:
            # The traces did not change while they were judged: record what was judged.
            for evaluator, part_stats in [(e, full_stats) for e in plan.full] + [(e, tail_stats) for e in plan.tail]:
                for variant in variants:
                    count = part_stats.by_variant.get(variant, {}).get(evaluator.name, [0, 0])[1]
                    previous = (recorded or {}).get((variant, evaluator.name)) if evaluator in plan.tail else None
                    judged[(variant, evaluator.name)] = Judgement(
                        evaluator.config_hash, before[0], before[1], count + (previous.results if previous else 0))
        replace_results(run_dir, parts, variants, plan.drop, slices_of(stats.by_variant), judged, keeping.result())
    finally:
        keeping.discard()
        for _, part in parts:
            part.unlink(missing_ok=True)
        cases.close()
    progress.finish("results")


@dataclass
class _Rejudging:
    """What an evaluation judges: ``full`` evaluators on every trace, ``tail`` evaluators on
    ``tail_span`` (traces appended since they last judged); old lines of ``drop`` evaluators
    are removed (None: every old line of the variants)."""

    full: list[Evaluator] = field(default_factory=list)
    tail: list[Evaluator] = field(default_factory=list)
    tail_span: LineSpan | None = None
    drop: set[str] | None = field(default_factory=set)

    def kept(self, recorded: dict[Slice, Judgement], variants: set[str]) -> dict[Slice, Judgement]:
        """The recorded judgements of the slices this evaluation leaves as they are."""
        if self.drop is None:
            return {key: j for key, j in recorded.items() if key[0] not in variants}
        touched = self.drop | {e.name for e in self.tail}
        return {key: j for key, j in recorded.items() if key[0] not in variants or key[1] not in touched}

    def nothing_to_do(self) -> bool:
        return not self.full and not self.tail and self.drop is not None and not self.drop


def _plan_rejudging(
    evaluators: list[Evaluator], variants: set[str], recorded: dict[Slice, Judgement], traces: tuple[int, int],
    traces_path: Path,
) -> _Rejudging:
    """Compare how each (variant, evaluator) slice was judged with the evaluators now."""
    inode, size = traces
    plan = _Rejudging()
    tails: dict[str, int] = {}
    for evaluator in evaluators:
        offsets: list[int] | None = []
        for variant in sorted(variants):
            j = recorded.get((variant, evaluator.name))
            if j is None or j.evaluator_hash != evaluator.config_hash or j.traces_inode != inode or j.traces_size > size:
                offsets = None
                break
            offsets.append(j.traces_size)
        if offsets is None or len(set(offsets)) > 1:
            plan.full.append(evaluator)
        elif offsets and offsets[0] < size:
            tails[evaluator.name] = offsets[0]
    if len(set(tails.values())) > 1:
        # Tails from different offsets: judge those evaluators in full rather than twice.
        plan.full += [e for e in evaluators if e.name in tails]
        tails = {}
    plan.tail = [e for e in evaluators if e.name in tails]
    if tails:
        start = next(iter(tails.values()))
        plan.tail_span = LineSpan(start, size, _line_number_at(traces_path, start))
    configured = {e.name for e in evaluators}
    plan.drop = {e.name for e in plan.full} | {name for variant, name in recorded
                                               if variant in variants and name not in configured}
    return plan


def _line_number_at(path: Path, offset: int) -> int:
    """The 1-based number of the line starting at byte ``offset``."""
    count = 0
    with path.open("rb") as handle:
        while offset > 0:
            block = handle.read(min(offset, 1 << 22))
            if not block:
                break
            count += block.count(b"\n")
            offset -= len(block)
    return count + 1


class _Background:
    """``work`` run once in a thread: started on demand, its result (or exception) on :meth:`result`."""

    def __init__(self, work: Callable[[], KeptLines]) -> None:
        self._work = work
        self._outcome: list[Any] = []
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="evalh-keep-results", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._outcome.append(self._work())
        except BaseException as exc:  # noqa: BLE001 - raised again by result()
            self._outcome.append(exc)

    def result(self) -> KeptLines:
        self.start()
        assert self._thread is not None
        self._thread.join()
        outcome = self._outcome.pop()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def discard(self) -> None:
        """Wait for the work if it started and remove what it left behind (the run failed)."""
        if self._thread is None:
            return
        self._thread.join()
        if self._outcome and isinstance(self._outcome[0], KeptLines) and self._outcome[0].path is not None:
            self._outcome[0].path.unlink(missing_ok=True)


async def _judge(
    evaluators: list[Evaluator], span: LineSpan | None, cases: CaseIndex, artifacts: ArtifactLoader,
    run_dir: RunDirectory, variants: set[str], concurrency: int, processes: int | None, stats: EvaluationStats,
    progress: Progress, alongside: Callable[[], None],
) -> list[Part]:
    """Judge the traces (of ``span``, or all) with ``evaluators`` into part files, in order;
    ``alongside`` is started once it is safe to start a thread (see judge_in_processes)."""
    if all(isinstance(e, SyncEvaluator) for e in evaluators):
        plan = SpanPlan(evaluators, cases, run_dir.traces, variants, artifacts)
        if span is None:
            return judge_in_processes(plan, run_dir, process_count(run_dir.traces, processes), stats, progress,
                                      alongside)
        alongside()
        return judge_one_span(plan, run_dir, span, stats, progress)
    alongside()
    part = run_dir.temp_file("results")
    try:
        await _judge_async(evaluators, cases, artifacts, run_dir.traces, variants, part, concurrency, stats, progress,
                           span)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return [(None, part)]  # every evaluator's lines, trace by trace


async def _judge_async(
    evaluators: list[Evaluator], cases: CaseIndex, artifacts: ArtifactLoader, traces_path: Path, variants: set[str],
    out_path: Path, concurrency: int, stats: EvaluationStats, progress: Progress, span: LineSpan | None = None,
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
            t for t in TRACES.iter_file(traces_path, span)
            if t.variant_name in variants and not (t.error and t.error.type in UNJUDGED_ERRORS)
        )
        await run_bounded(traces, judge, concurrency)
