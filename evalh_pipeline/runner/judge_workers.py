"""Judging a traces file with synchronous evaluators, in this process and worker processes.

A large traces file is cut into byte ranges of whole lines; each range is judged into its
own part files, one per evaluator (the first in this process, the others in a process
pool), and each evaluator's parts, concatenated in order, are the results one process would
write (timestamps aside). The ranges only share the work out: what a result judged is
recorded by content, as the ``trace_hash`` of its trace's line (store/records.py).

With a ``select`` (in this process only), each trace is judged by the evaluators it names
for the trace's hash: those without a current result for it (runner/evaluation.py).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from multiprocessing.context import BaseContext
from pathlib import Path

from evalh_pipeline.evaluators.base import Evaluator, SyncEvaluator
from evalh_pipeline.models import EvalCase, Trace
from evalh_pipeline.runner.judging import UNJUDGED_ERRORS, EvaluationStats
from evalh_pipeline.runner.progress import NoProgress, Progress
from evalh_pipeline.runner.result_lines import Judged, raised, result_line_list, secrets_of
from evalh_pipeline.store.case_index import CaseIndex
from evalh_pipeline.store.jsonl import LineSpan, iter_raw_lines, split_lines
from evalh_pipeline.store.records import TRACES
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.workspaces.artifacts import ArtifactLoader

logger = logging.getLogger(__name__)

# Evaluator name -> its part files of new results, in trace order.
Parts = dict[str, list[Path]]
# The positions (in the plan's evaluators) of the evaluators to judge a trace of this hash
# by, or None: every one.
Select = Callable[[str], Sequence[int] | None]

# Below this many bytes of traces per process, starting a worker costs more than it saves.
MIN_BYTES_PER_PROCESS = 8 << 20


@dataclass
class SpanPlan:
    """Everything a process needs to judge a span of the traces file (picklable)."""

    evaluators: list[Evaluator]
    cases: CaseIndex
    traces: Path
    variants: set[str]
    artifacts: ArtifactLoader


def process_count(traces: Path, requested: int | None) -> int:
    """``requested`` (at least 1), else one per CPU, fewer for a small traces file."""
    if requested is not None:
        return max(1, requested)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    size = traces.stat().st_size if traces.exists() else 0
    return max(1, min(cpus, size // MIN_BYTES_PER_PROCESS))


def judge_in_processes(
    plan: SpanPlan, run_dir: RunDirectory, processes: int, stats: EvaluationStats, progress: Progress,
) -> Parts:
    """Judge the traces file in up to ``processes`` processes (this one included) with every
    evaluator of the plan; each evaluator's part files, in trace order."""
    spans: list[LineSpan | None] = list(split_lines(plan.traces, processes)) if processes > 1 else [None]
    context = process_context(plan) if len(spans) > 1 else None
    if context is None:
        spans = [None]
    parts = [[run_dir.temp_file("results") for _ in plan.evaluators] for _ in spans]
    try:
        if len(spans) == 1:
            _judge_span(plan, spans[0], parts[0], stats, progress)
        else:
            with ProcessPoolExecutor(max_workers=len(spans) - 1, mp_context=context) as pool:
                futures = [pool.submit(_judge_span_in_worker, plan, span, files)
                           for span, files in zip(spans[1:], parts[1:])]
                _judge_span(plan, spans[0], parts[0], stats, progress)  # this process takes the first span meanwhile
                for future in futures:
                    try:
                        share = future.result()
                    except BrokenProcessPool as exc:
                        raise RuntimeError(f"a judging worker process died ({exc})") from None
                    stats.merge(share)
                    progress.advance("results", share.traces)
    except BaseException:
        for files in parts:
            for part in files:
                part.unlink(missing_ok=True)
        raise
    return {evaluator.name: [files[e] for files in parts] for e, evaluator in enumerate(plan.evaluators)}


def judge_selected(
    plan: SpanPlan, run_dir: RunDirectory, select: Select, stats: EvaluationStats, progress: Progress
) -> Parts:
    """Judge each trace of the traces file, in this process, by the evaluators ``select``
    names for its hash; each evaluator's part file."""
    files = [run_dir.temp_file("results") for _ in plan.evaluators]
    try:
        _judge_span(plan, None, files, stats, progress, select)
    except BaseException:
        for part in files:
            part.unlink(missing_ok=True)
        raise
    return {evaluator.name: [part] for evaluator, part in zip(plan.evaluators, files)}


def process_context(plan: SpanPlan) -> BaseContext | None:
    """forkserver where the platform has it, else spawn; None: this process only.

    Never fork: the CLI's process runs Dagster's threads and the system loop's, and forking a
    multi-threaded process can deadlock on a lock another thread held (a thread count does
    not see native threads). The forkserver starts workers from a clean single-threaded
    server, at the price of importing the engine once. Either way the plan is pickled to the workers, which it is for the built-in evaluators; a
    plan that does not pickle (a plugin evaluator) is judged here, with a warning. A
    daemonic process (a Dagster step's) may not have children.
    """
    if multiprocessing.current_process().daemon:
        return None
    try:
        pickle.dumps(plan)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        names = ", ".join(type(e).__name__ for e in plan.evaluators)
        logger.warning("judging in one process: the evaluators (%s) cannot be sent to worker processes (%s)",
                       names, exc)
        return None
    if "forkserver" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("spawn")


# Passed to evaluators that declare they never read the case (Evaluator.reads_case).
NO_CASE = EvalCase(id="", input={})
# What re-evaluation reads of every trace besides what the evaluators declare.
_IDENTITY_FIELDS = frozenset({"run_id", "case_id", "variant_name", "sample", "error"})


def trace_decoder(evaluators: Sequence[Evaluator]) -> Callable[[bytes | str, Path, int], Trace]:
    """How to decode the traces ``evaluators`` judge: only the fields they read when every one
    declares them (Evaluator.trace_fields), so re-judging one cheap evaluator on a large run
    does not validate whole traces; else whole traces."""
    declared = [e.trace_fields for e in evaluators]
    if not declared or any(fields is None for fields in declared):
        return TRACES.decode
    return TRACES.projection(_IDENTITY_FIELDS.union(*declared))  # type: ignore[arg-type]


def _judge_span_in_worker(plan: SpanPlan, span: LineSpan, parts: list[Path]) -> EvaluationStats:
    """A worker's task: judge ``span`` into ``parts`` (one per evaluator); its stats go back to the parent."""
    try:
        plan.cases = plan.cases.reopened()  # its own file handle and cache
        stats = EvaluationStats()
        _judge_span(plan, span, parts, stats, NoProgress())
        return stats
    except Exception as exc:
        try:
            pickle.dumps(exc)
        except Exception:  # noqa: BLE001 - an exception the parent could not receive: send its text
            raise RuntimeError(f"{type(exc).__name__}: {exc}") from None
        raise


def _judge_span(plan: SpanPlan, span: LineSpan | None, out_paths: list[Path], stats: EvaluationStats,
                progress: Progress, select: Select | None = None) -> None:
    """Judge the traces of ``span`` (all of them for ``None``) with synchronous evaluators
    (those ``select`` names for each trace's hash, or all), each evaluator's lines into its
    own file of ``out_paths``; every result records the hash of its trace's line."""
    evaluators: list[SyncEvaluator] = plan.evaluators  # type: ignore[assignment]
    variants, cases, traces_path = plan.variants, plan.cases, plan.traces
    decode = trace_decoder(evaluators)
    # A projection decodes no faster than the variant is read off the line: no pre-check then.
    skim = decode == TRACES.decode
    reads_case = any(e.reads_case for e in evaluators)
    secrets = secrets_of(evaluators)
    everyone = range(len(evaluators))
    tallies: dict[str, list[list[int]]] = {}
    now, utc = datetime.now, timezone.utc
    content_hash = TRACES.content_hash
    unreported = 0  # progress goes out in batches: a bar update per trace was a visible cost
    with ExitStack() as files:
        outs = [files.enter_context(path.open("wb", buffering=1 << 20)) for path in out_paths]
        for number, line in iter_raw_lines(traces_path, span):
            # The variant read off the line skips other variants' traces without parsing them.
            if skim:
                leading = TRACES.leading(line, "variant_name")
                if leading is not None and leading[0] not in variants:
                    continue
            trace_hash = content_hash(line)
            chosen = select(trace_hash) if select is not None else None
            if chosen is None:
                chosen = everyone
            elif not chosen:
                continue  # every evaluator has a current result for it: not even decoded
            trace = decode(line, traces_path, number)
            if trace.variant_name not in variants or (trace.error is not None and trace.error.type in UNJUDGED_ERRORS):
                continue
            case = cases.get(trace.case_id) if reads_case else NO_CASE
            artifact = plan.artifacts.get(trace.case_id, trace.variant_name, trace.sample)
            judged = []
            started = now(utc)
            for index in chosen:
                evaluator = evaluators[index]
                error = None
                try:
                    verdict = evaluator.evaluate_sync(case, trace, artifact)
                except Exception as exc:  # noqa: BLE001 - one evaluator failing never stops the others
                    verdict, error = raised(evaluator, exc)
                finished = now(utc)
                judged.append(Judged(evaluator, verdict, error, started, finished))
                started = finished
            rows = tallies.get(trace.variant_name)
            if rows is None:
                rows = tallies[trace.variant_name] = [[0, 0, 0] for _ in evaluators]
            for index, result, j in zip(chosen, result_line_list(trace, judged, secrets, trace_hash), judged):
                outs[index].write(result)
                row = rows[index]
                row[0] += j.verdict.passed and j.error is None
                row[1] += 1
                row[2] += j.error is not None
            stats.traces += 1
            unreported += 1
            if unreported == 1024:
                progress.advance("results", unreported)
                unreported = 0
    if unreported:
        progress.advance("results", unreported)
    # Tallied per span and folded in once: a dict walk per result was a visible cost.
    for variant, rows in tallies.items():
        by_evaluator = stats.by_variant.setdefault(variant, {})
        for evaluator, (passed, judged_n, errored) in zip(evaluators, rows):
            if not judged_n:
                continue
            tally = by_evaluator.setdefault(evaluator.name, [0, 0])
            tally[0] += passed
            tally[1] += judged_n
            stats.results += judged_n
            stats.evaluator_errors += errored
