"""Judge persisted traces: every evaluator on every trace, results replaced per variant.

Reads only the run directory (cases snapshot + traces), never the system under test, so
re-evaluation is cheap and repeatable. An evaluator that raises fails its own result only.

When every evaluator is a :class:`SyncEvaluator` (no I/O), traces are judged in a plain
loop, and a large traces file is cut into byte ranges judged by worker processes, each
into its own part file; the parts are concatenated in order, so the results file is the
same as one process would write (timestamps aside). Evaluators that do I/O (judges) run
in the async pool under the run's concurrency knob.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import pickle
import shutil
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorContext, SyncEvaluator
from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.models import EvalCase, EvaluationResult, FilesystemArtifact, Trace
from evalh_pipeline.runner.pool import run_bounded
from evalh_pipeline.runner.progress import NoProgress, Progress
from evalh_pipeline.runner.result_lines import Judged, build_result, raised, result_lines
from evalh_pipeline.store.case_index import CaseIndex
from evalh_pipeline.store.jsonl import LineSpan, iter_raw_lines, split_lines
from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.records import RESULTS, TRACES
from evalh_pipeline.store.result_slices import Slice, record_slices, recorded_slices
from evalh_pipeline.store.run_dir import RunDirectory, runs_cache_dir, write_atomic
from evalh_pipeline.workspaces.artifacts import ArtifactLoader

# Cells the runner never started have nothing to judge.
UNJUDGED_ERRORS = frozenset({"cost_limit"})


@dataclass
class EvaluationStats:
    traces: int = 0
    results: int = 0
    evaluator_errors: int = 0
    # variant -> evaluator -> [passed, judged]
    by_variant: dict[str, dict[str, list[int]]] = field(default_factory=dict)

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


def build_evaluators(spec: EvalSpec, only: list[str] | None = None) -> list[Evaluator]:
    """Instantiate the eval's evaluators (all, or the named ones)."""
    selected = [e for e in spec.config.evaluators if only is None or e.name in only]
    missing = set(only or []) - {e.name for e in selected}
    if missing:
        raise ValueError(f"no evaluator named {', '.join(sorted(missing))} in {spec.path.name}")
    context = evaluator_context(spec)
    return [EVALUATORS.get(e.type)(e.name, e.type, e.config, context) for e in selected]


def evaluator_context(spec: EvalSpec) -> EvaluatorContext:
    """The context every evaluator of ``spec`` is built with."""
    return EvaluatorContext(
        eval_dir=spec.eval_dir,
        env=dict(os.environ),
        secret_values=spec.secret_values,
        cache_dir=runs_cache_dir(spec.runs_root) if "://" not in str(spec.runs_root) else None,
        max_concurrency=spec.config.run.max_concurrency,
    )


# Below this many bytes of traces per process, starting a worker costs more than it saves.
MIN_BYTES_PER_PROCESS = 8 << 20


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
            plan = _SpanPlan(evaluators, cases, run_dir.traces, variants, artifacts)
            parts = _judge_in_processes(plan, run_dir, _process_count(run_dir.traces, processes), stats, progress)
        else:
            parts = [run_dir.temp_file("results")]
            await _judge_async(evaluators, cases, artifacts, run_dir.traces, variants, parts[0], concurrency, stats,
                               progress)
        selected = {e.name for e in evaluators} if evaluator_names is not None else None
        _replace_results(run_dir, parts, variants, selected, _slices(stats.by_variant))
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
            judged = await _judge_all(evaluators, cases.get(trace.case_id), trace, artifact)
            out.write(result_lines(trace, judged))
            _count(stats, trace, judged)
            progress.advance("results")

        traces = (
            t for t in TRACES.iter_file(traces_path)
            if t.variant_name in variants and not (t.error and t.error.type in UNJUDGED_ERRORS)
        )
        await run_bounded(traces, judge, concurrency)


def _count(stats: EvaluationStats, trace: Trace, judged: list[Judged]) -> None:
    for j in judged:
        stats.tally(trace.variant_name, j.evaluator.name, j.verdict.passed and j.error is None, j.error is not None)
    stats.traces += 1


@dataclass
class _SpanPlan:
    """Everything a process needs to judge a span of the traces file (picklable)."""

    evaluators: list[Evaluator]
    cases: CaseIndex
    traces: Path
    variants: set[str]
    artifacts: ArtifactLoader


def _process_count(traces: Path, requested: int | None) -> int:
    if requested is not None:
        return max(1, requested)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    size = traces.stat().st_size if traces.exists() else 0
    return max(1, min(cpus, size // MIN_BYTES_PER_PROCESS))


def _judge_in_processes(
    plan: _SpanPlan, run_dir: RunDirectory, processes: int, stats: EvaluationStats, progress: Progress
) -> list[Path]:
    """Judge the traces file in up to ``processes`` processes (this one included); the part files, in order."""
    spans = split_lines(plan.traces, processes) if processes > 1 else [None]
    context = _process_context(plan) if len(spans) > 1 else None
    if context is None:
        spans = [None]
    parts = [run_dir.temp_file("results") for _ in spans]
    workers: list[tuple[Any, Connection]] = []
    try:
        for span, part in zip(spans[1:], parts[1:]):
            receive, send = context.Pipe(duplex=False)
            worker = context.Process(target=_worker_main, args=(send, plan, span, part), daemon=True)
            worker.start()
            send.close()
            workers.append((worker, receive))
        _judge_span(plan, spans[0], parts[0], stats, progress)
        for worker, receive in workers:
            try:
                outcome, payload = receive.recv()
            except EOFError:
                worker.join()
                raise RuntimeError(f"a judging worker process died (exit code {worker.exitcode})") from None
            worker.join()
            if outcome == "error":
                raise payload
            stats.merge(payload)
            progress.advance("results", payload.traces)
    except BaseException:
        for part in parts:
            part.unlink(missing_ok=True)
        raise
    finally:
        for worker, receive in workers:
            receive.close()
            if worker.is_alive():
                worker.terminate()
                worker.join()
    return parts


def _process_context(plan: _SpanPlan) -> Any:
    """fork when this process has no other threads (cheap, nothing to pickle), else spawn.

    Forking a multi-threaded process can deadlock on a lock another thread held; spawn
    needs the plan to pickle, which it does for the built-in evaluators. ``None``: judge
    in this process only (also in a daemonic process, which may not have children).
    """
    if multiprocessing.current_process().daemon:
        return None
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    try:
        pickle.dumps(plan)
    except Exception:  # noqa: BLE001 - an unpicklable plugin just means one process
        return None
    return multiprocessing.get_context("spawn")


def _worker_main(send: Connection, plan: _SpanPlan, span: LineSpan, part: Path) -> None:
    """Entry point of a judging worker: judge ``span`` into ``part``, send back the stats or the error."""
    try:
        plan.cases = plan.cases.reopened()  # a forked copy would share the parent's file offset
        stats = EvaluationStats()
        _judge_span(plan, span, part, stats, NoProgress())
        message: tuple[str, Any] = ("ok", stats)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
        message = ("error", exc)
    try:
        send.send(message)
    except Exception:  # noqa: BLE001 - an unpicklable exception: send its text
        send.send(("error", RuntimeError(f"{type(message[1]).__name__}: {message[1]}")))
    finally:
        send.close()


def _judge_span(plan: _SpanPlan, span: LineSpan | None, out_path: Path, stats: EvaluationStats, progress: Progress) -> None:
    """Judge the traces of ``span`` (all of them for ``None``) with synchronous evaluators into ``out_path``."""
    evaluators: list[SyncEvaluator] = plan.evaluators  # type: ignore[assignment]
    variants, cases, traces_path = plan.variants, plan.cases, plan.traces
    tallies: dict[str, list[list[int]]] = {}
    now, utc = datetime.now, timezone.utc
    unreported = 0  # progress goes out in batches: a bar update per trace was a visible cost
    with out_path.open("wb", buffering=1 << 20) as out:
        for number, line in iter_raw_lines(traces_path, span):
            # The variant read off the line skips other variants' traces without parsing them.
            leading = TRACES.leading(line, "variant_name")
            if leading is not None and leading[0] not in variants:
                continue
            trace = TRACES.decode(line, traces_path, number)
            if trace.variant_name not in variants or (trace.error is not None and trace.error.type in UNJUDGED_ERRORS):
                continue
            case = cases.get(trace.case_id)
            artifact = plan.artifacts.get(trace.case_id, trace.variant_name, trace.sample)
            judged = []
            started = now(utc)
            for evaluator in evaluators:
                error = None
                try:
                    verdict = evaluator.evaluate_sync(case, trace, artifact)
                except Exception as exc:  # noqa: BLE001 - one evaluator failing never stops the others
                    verdict, error = raised(evaluator, exc)
                finished = now(utc)
                judged.append(Judged(evaluator, verdict, error, started, finished))
                started = finished
            out.write(result_lines(trace, judged))
            rows = tallies.get(trace.variant_name)
            if rows is None:
                rows = tallies[trace.variant_name] = [[0, 0, 0] for _ in evaluators]
            for row, j in zip(rows, judged):
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
            tally = by_evaluator.setdefault(evaluator.name, [0, 0])
            tally[0] += passed
            tally[1] += judged_n
            stats.results += judged_n
            stats.evaluator_errors += errored


def _slices(by_variant: dict[str, dict[str, Any]]) -> set[Slice]:
    return {(variant, evaluator) for variant, by_evaluator in by_variant.items() for evaluator in by_evaluator}


def _replace_results(
    run_dir: RunDirectory, new: Path | Sequence[Path], variants: set[str], evaluators: set[str] | None,
    new_slices: set[Slice] | None = None,
) -> None:
    """results.jsonl := (old lines outside the re-judged slice) + new lines (``new``, in order), atomically.

    ``new_slices`` are the (variant, evaluator) pairs of the new lines, recorded so the next
    replacement can skip reading old lines that are all in its slice (None: not known).
    """
    parts = [new] if isinstance(new, Path) else list(new)
    with locked(run_dir.lock):
        merged_path = run_dir.temp_file("results.merge")
        try:
            old = recorded_slices(run_dir)
            if old is not None and all(v in variants and (evaluators is None or e in evaluators) for v, e in old):
                kept: set[Slice] = set()  # every old line is re-judged: nothing to read
            else:
                with merged_path.open("wb", buffering=1 << 20) as merged:
                    kept = _copy_outside_slice(run_dir.results, merged, variants, evaluators)
            if kept or not parts:
                target = merged_path
            else:
                # Nothing old survives: the first part becomes the file, no copy of it.
                target = parts[0]
                parts = parts[1:]
                merged_path.unlink()
            with target.open("ab") as out:
                for part in parts:
                    with part.open("rb") as fresh:
                        shutil.copyfileobj(fresh, out, 1 << 22)
            os.replace(target, run_dir.results)
            record_slices(run_dir, None if new_slices is None else kept | new_slices)
        except BaseException:
            merged_path.unlink(missing_ok=True)
            raise


def _copy_outside_slice(path: Path, out: Any, variants: set[str], evaluators: set[str] | None) -> set[Slice]:
    """Copy the complete lines of ``path`` that are not in the slice to ``out``; their slices.

    A regex drops the lines in the slice chunk by chunk (a per-line Python loop was half a
    second per 500,000 results); what it leaves — lines of other slices, other layouts,
    blank lines — is checked line by line. A torn last line is dropped, as readers do.
    """
    kept: set[Slice] = set()
    if not path.exists():
        return kept
    in_slice = RESULTS.lines_where({"variant_name": variants, "evaluator": evaluators})
    pending = b""
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 23):
            data = pending + chunk
            cut = data.rfind(b"\n") + 1
            data, pending = data[:cut], data[cut:]
            # Each match takes a line with the newline before it, so the rest stays whole lines.
            for raw in in_slice.sub(b"", b"\n" + data)[1:].split(b"\n")[:-1]:
                if not raw.strip():
                    continue
                variant, evaluator = RESULTS.read_fields(raw, "variant_name", "evaluator")
                if not (variant in variants and (evaluators is None or evaluator in evaluators)):
                    out.write(raw + b"\n")
                    kept.add((variant, evaluator))
    return kept


async def judge_trace(
    evaluators: list[Evaluator], case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None = None
) -> list[EvaluationResult]:
    """Every evaluator's result for one trace; cells that never ran get none."""
    return [build_result(trace, j) for j in await _judge_all(evaluators, case, trace, artifact)]


async def _judge_all(
    evaluators: list[Evaluator], case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None
) -> list[Judged]:
    if trace.error is not None and trace.error.type in UNJUDGED_ERRORS:
        return []
    return [await _judged(evaluator, case, trace, artifact) for evaluator in evaluators]


class InlineResults:
    """Results judged right after each trace of a fresh run is persisted.

    Judging while the systems are busy overlaps the two; the results stay in a staging
    file that the results stage adopts only if the evaluator config is unchanged and
    every trace was judged. The trace is always on disk before its evaluators run.
    """

    def __init__(self, spec: EvalSpec, run_dir: RunDirectory, variants: list[str]) -> None:
        self.evaluators = build_evaluators(spec)
        self.run_dir = run_dir
        self.meta = {"fingerprint": evaluators_fingerprint(spec), "variants": sorted(variants)}
        self.stats = EvaluationStats()
        self._slice = sorted(variants)
        self._out = run_dir.inline_results(self._slice)[0].open("wb", buffering=1 << 20)

    async def judge(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None = None) -> None:
        judged = await _judge_all(self.evaluators, case, trace, artifact)
        self._out.write(result_lines(trace, judged))
        _count(self.stats, trace, judged)

    def close(self, complete: bool) -> None:
        """Publish the staged results (``complete``) or throw them away."""
        self._out.close()
        if not complete:
            _discard_inline(self.run_dir, self._slice)
            return
        # The traces file as judged: any later change to it voids the staged results.
        meta = {**self.meta, "traces_bytes": self.run_dir.traces.stat().st_size, "stats": asdict(self.stats)}
        write_atomic(self.run_dir.inline_results(self._slice)[1], json.dumps(meta))


def adopt_inline_results(run_dir: RunDirectory, variants: list[str], fingerprint: str, stats: EvaluationStats) -> bool:
    """Move staged inline results into results.jsonl if they match this evaluation exactly."""
    staged, meta_path = run_dir.inline_results(variants)
    if not meta_path.exists():
        _discard_inline(run_dir, variants)
        return False
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    traces_bytes = run_dir.traces.stat().st_size if run_dir.traces.exists() else -1
    if (meta.get("fingerprint"), meta.get("variants"), meta.get("traces_bytes")) != (fingerprint, variants, traces_bytes):
        _discard_inline(run_dir, variants)
        return False
    _replace_results(run_dir, staged, set(variants), None, _slices(meta["stats"]["by_variant"]))
    _discard_inline(run_dir, variants)
    for key, value in meta["stats"].items():
        setattr(stats, key, value)
    return True


def _discard_inline(run_dir: RunDirectory, variants: list[str]) -> None:
    for path in reversed(run_dir.inline_results(variants)):  # the meta first: it vouches for the results
        path.unlink(missing_ok=True)


async def _judged(evaluator: Evaluator, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Judged:
    started = datetime.now(timezone.utc)
    error = None
    try:
        if isinstance(evaluator, SyncEvaluator):
            verdict = evaluator.evaluate_sync(case, trace, artifact)  # no event-loop round trip
        else:
            verdict = await evaluator.evaluate(case, trace, artifact)
    except Exception as exc:  # noqa: BLE001 - one evaluator failing never stops the others
        verdict, error = raised(evaluator, exc)
    return Judged(evaluator, verdict, error, started, datetime.now(timezone.utc))
