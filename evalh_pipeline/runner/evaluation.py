"""Judge persisted traces: exactly the (trace, evaluator) pairs that have no current result.

Reads only the run directory (cases snapshot + traces), never the system under test, so
re-evaluation is cheap and repeatable. An evaluator that raises fails its own result only.

Content is the only evidence. Every trace line has a hash of its own content
(``trace_hash``, store/records.py) and every result records the trace_hash it judged and
its evaluator's config hash: a result is current while its trace still has that hash and
its evaluator that config. Nothing else (inode, size, offset, mtime) is ever trusted, so a
run folder copied, moved, synced or edited by hand is judged correctly.

Per evaluator, one of (cheapest first):

- kept: the results store says every result of it was current for exactly these traces
  (the digest of traces.jsonl's complete lines) and this config: nothing is read;
- adopted: a complete inline pass (runner/inline_results.py) of this run judged exactly
  these traces with this config: its file moves into the store (also when every result is
  to be judged again: it was judged just now);
- judged in full: no result of it can be current (its config changed, it is new, or
  re-judging was asked for): every trace is judged, in worker processes for a large file
  (runner/judge_workers.py) when every evaluator is synchronous;
- merged: the traces changed (a resume appended cells, a torn tail was set aside, a line
  was edited), or some result of it could not be judged (its judge was unreachable:
  models/result.py NOT_JUDGED_ERRORS): its results whose trace_hash is still that of a
  trace are kept, and the traces without one (or with a result not judged) are judged.

A result that could not be judged is never current: the next evaluation (``evalh
re-evaluate``, ``retry-failed --include-evaluator-failures``) judges it again from the
saved trace, with no system call.

The results store (store/results_store.py) then gets a new file for each evaluator that
changed, and results.jsonl is made again from the store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.evaluators.base import Evaluator, SyncEvaluator
from evalh_pipeline.models import NOT_JUDGED_ERRORS, Trace
from evalh_pipeline.runner.case_evaluators import CaseEvaluatorGroup
from evalh_pipeline.runner.inline_results import StagedFile, discard_staged, staged_files, staged_lines
from evalh_pipeline.runner.judge_workers import Parts, SpanPlan, judge_in_processes, judge_selected, process_count
from evalh_pipeline.runner.judging import (
    UNJUDGED_ERRORS,
    EvaluationStats,
    build_evaluators,
    count_judged,
    evaluators_fingerprint,
    judge_all,
    judge_trace,
)
from evalh_pipeline.runner.pool import run_bounded
from evalh_pipeline.runner.rate_limits import record_rate_limits, run_rate_limits
from evalh_pipeline.runner.progress import NoProgress, Progress
from evalh_pipeline.runner.result_lines import result_line_list
from evalh_pipeline.store.case_index import CaseIndex
from evalh_pipeline.store.jsonl import complete_lines_digest, iter_raw_lines
from evalh_pipeline.store.locking import under_run_lock
from evalh_pipeline.store.records import RESULTS, TRACES
from evalh_pipeline.store.results_store import (
    EvaluatorEntry,
    NewResults,
    adopt_file,
    commit,
    entry_lines,
    legacy_results,
    read_store,
)
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic
from evalh_pipeline.workspaces.artifacts import ArtifactLoader

# The names callers import from here.
__all__ = ["EvaluationStats", "build_evaluators", "evaluate_traces", "evaluators_fingerprint", "judge_trace",
           "last_evaluation"]

# The temp files this writer makes in the run folder (RunDirectory.temp_file purposes): a
# killed evaluation's leftovers, removed by the next one.
_TEMP_PURPOSES = ("results",)


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
    traces_digest: str | None = None,
    pools_url: str | None = None,
) -> EvaluationStats:
    """(Re)judge the traces of ``variant_names``.

    By default only the (trace, evaluator) pairs without a current result are judged (see
    the module docstring), and results of evaluators no longer configured are dropped;
    every other result line is kept byte for byte (``stats.results_kept``). With
    ``incremental=False`` every result of the variants is judged again; ``evaluator_names``
    re-judges exactly those evaluators on every trace and keeps the others' results.

    ``processes`` caps the worker processes used when every evaluator is synchronous
    (default: one per CPU, fewer for a small traces file; 1 judges in this process only).

    ``traces_digest``: the digest of traces.jsonl's complete lines that the traces stage of
    the same launch kept as it wrote them (``TraceStats.traces_digest``), so the file is not
    read to hash it again; None (another launch, another process): hashed from the file.
    ``pools_url``: the database the run's pools are counted in (see :func:`produce_traces`).
    """
    progress = progress or NoProgress()
    # This writer holds the run's lock: temp files of its purposes are a killed one's.
    run_dir.remove_stale_temp_files(*_TEMP_PURPOSES)
    limits = run_rate_limits(spec, run_dir, max_concurrency, pools_url)
    # The run's cases carry their own evaluators (runner/case_evaluators.py).
    evaluators = build_evaluators(spec, evaluator_names, rate_limits=limits, cases=run_dir.cases)
    variants = set(variant_names if variant_names is not None else spec.variant_names)
    stats = EvaluationStats()
    plan = _plan(spec, run_dir, evaluators, variants, explicit=evaluator_names is not None, incremental=incremental,
                 traces_digest=traces_digest)
    await _evaluate(plan, spec, run_dir, variants, stats, concurrency=max_concurrency or spec.config.run.max_concurrency,
                    progress=progress, processes=processes)
    record_rate_limits(run_dir, limits, "results")
    write_atomic(run_dir.last_evaluation, json.dumps(asdict(stats)))
    return stats


def last_evaluation(run_dir: RunDirectory) -> dict[str, Any] | None:
    """The counts of the run's last evaluation (EvaluationStats as a dict), if recorded."""
    try:
        loaded: dict[str, Any] = json.loads(run_dir.last_evaluation.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return loaded


@dataclass
class _Plan:
    """What one evaluation does, evaluator by evaluator."""

    traces: str  # the digest of the traces file's complete lines
    every_variant: bool  # the evaluation covers every variant of the run
    entries: dict[str, EvaluatorEntry] | None  # the store as it was (None: no store)
    keep: dict[str, EvaluatorEntry] = field(default_factory=dict)  # evaluators left as they are
    adopt: dict[str, StagedFile] = field(default_factory=dict)
    full: list[Evaluator] = field(default_factory=list)
    merge: list[Evaluator] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # the store's evaluators, in results.jsonl order
    dropped: bool = False  # an evaluator of the store is no longer configured
    carried: set[str] = field(default_factory=set)  # judged: a run from before the store keeps the others

    def nothing_to_do(self, run_dir: RunDirectory) -> bool:
        return (not self.adopt and not self.full and not self.merge and not self.dropped
                and self.entries is not None and run_dir.results.exists())


def _plan(spec: EvalSpec, run_dir: RunDirectory, evaluators: list[Evaluator], variants: set[str], *,
          explicit: bool, incremental: bool, traces_digest: str | None) -> _Plan:
    meta = run_dir.read_meta() if run_dir.exists() else {}
    run_variants = set(meta.get("variants") or []) | set(spec.variant_names)
    entries = read_store(run_dir)
    plan = _Plan(traces=traces_digest or complete_lines_digest(run_dir.traces), every_variant=variants >= run_variants,
                 entries=entries)
    configured = [e.name for e in spec.config.evaluators] + [e.name for e in evaluators
                                                             if isinstance(e, CaseEvaluatorGroup)]
    plan.order = configured + [name for name in (entries or {}) if name not in configured]
    staged = {s.evaluator: s for s in staged_files(run_dir)}
    any_staged = bool(run_dir.staged_inline_results())

    def may_be_current(entry: EvaluatorEntry | None, config_hash: str) -> bool:
        """Whether a candidate result of the evaluator may be current (else: judged in full)."""
        if any_staged:
            return True
        if entries is None:
            return run_dir.results.exists()  # a run from before the store: its lines say
        # The store's file holds lines of its recorded config (and, after an evaluation of
        # some variants only, older lines of the others).
        return entry is not None and entry.evaluator_hash == config_hash

    for evaluator in evaluators:
        entry = (entries or {}).get(evaluator.name)
        found = staged.get(evaluator.name)
        if (not explicit and found is not None and plan.every_variant and plan.traces and found.traces == plan.traces
                and found.evaluator_hash == evaluator.config_hash and set(found.variants) >= run_variants):
            # Judged by this run's own trace pass, on exactly these traces, with this config:
            # as good as judging them now, even when every result is to be judged again.
            plan.adopt[evaluator.name] = found
        elif explicit or not incremental:
            plan.full.append(evaluator)
        elif (entry is not None and plan.traces and entry.evaluator_hash == evaluator.config_hash
              and entry.traces == plan.traces and not _has_not_judged(run_dir, evaluator, entry)):
            plan.keep[evaluator.name] = entry
        elif isinstance(evaluator, CaseEvaluatorGroup) and entry is not None:
            # Each result records its own case's config hash: those of unchanged cases are kept.
            plan.merge.append(evaluator)
        elif not may_be_current(entry, evaluator.config_hash):
            plan.full.append(evaluator)  # no result of it can be current
        else:
            plan.merge.append(evaluator)
    judged = {e.name for e in evaluators}
    if entries is None and explicit:
        plan.carried = judged
    for name, entry in (entries or {}).items():
        if name in judged:
            continue
        if explicit or name in configured:
            plan.keep[name] = entry  # not asked about (or not built): left as it is
        else:
            plan.dropped = True  # no longer configured: its results go
    return plan


async def _evaluate(plan: _Plan, spec: EvalSpec, run_dir: RunDirectory, variants: set[str], stats: EvaluationStats, *,
                    concurrency: int, progress: Progress, processes: int | None) -> None:
    # Changed: judged in full, or a case evaluator whose config changed on some of its cases.
    stats.evaluators_rejudged = sorted([e.name for e in plan.full] + [
        e.name for e in plan.merge if isinstance(e, CaseEvaluatorGroup)
        and (plan.entries or {}).get(e.name) is not None and plan.entries[e.name].evaluator_hash != e.config_hash])
    stats.results_kept = sum(entry.results for entry in plan.keep.values())
    if plan.nothing_to_do(run_dir):
        discard_staged(run_dir)  # what an inline pass staged is current in the store already, or stale
        return
    entries: dict[str, EvaluatorEntry] = dict(plan.keep)
    if plan.carried:
        entries.update(_carry_legacy(run_dir, plan.carried))
    for name, found in plan.adopt.items():
        entries[name] = EvaluatorEntry(adopt_file(run_dir, name, found.path, found.digest), found.evaluator_hash,
                                       plan.traces, found.count)
        # Judged by this run, as its traces were made: counted as judged.
        stats.results += found.count
        stats.evaluator_errors += found.errors
        stats.traces = max(stats.traces, found.judged_traces)
        for variant, (passed, judged) in found.tallies.items():
            stats.by_variant.setdefault(variant, {})[name] = [passed, judged]
    judging = plan.full + plan.merge
    if judging:
        cases = CaseIndex(run_dir.cases)
        parts: Parts = {}
        progress.start("results", None)
        try:
            merging = _Merge(run_dir, plan, variants) if plan.merge else None
            parts = await _judge(judging, merging, cases, ArtifactLoader(spec, run_dir), run_dir, variants,
                                 concurrency, processes, stats, progress)
            if merging is not None:
                stats.traces_appended = merging.traces_judged
            for evaluator in judging:
                entries[evaluator.name] = _write(run_dir, plan, evaluator, variants, parts.get(evaluator.name, []),
                                                 merging, stats)
        finally:
            for files in parts.values():
                for part in files:
                    part.unlink(missing_ok=True)
            cases.close()
        progress.finish("results")
    commit(run_dir, entries, plan.order)
    discard_staged(run_dir)


def _candidates(run_dir: RunDirectory, plan: _Plan, evaluators: Iterable[str]) -> Iterator[bytes]:
    """Every result line of ``evaluators`` that may be current (and maybe others'): their
    files in the store (or, without a store, results.jsonl) and the lines staged by inline
    passes."""
    if plan.entries is not None:
        for name in evaluators:
            if name in plan.entries:
                yield from entry_lines(run_dir, plan.entries[name])
    else:
        yield from legacy_results(run_dir)
    yield from staged_lines(run_dir)


class _Merge:
    """Which (trace hash, evaluator) pairs of the merged evaluators have a current result.

    One bit per merged evaluator, per trace hash: set when a candidate result of that
    evaluator records this trace hash and the evaluator's config hash. The judging pass
    (``select``) marks each trace hash it meets (``SEEN``) and names the evaluators without
    a bit; the writing pass keeps one candidate per (trace hash, evaluator) whose trace was
    met. A trace hash is 32 hex digits: a dict entry per trace, never the traces themselves.
    """

    SEEN = 1

    def __init__(self, run_dir: RunDirectory, plan: _Plan, variants: set[str]) -> None:
        self.evaluators = plan.merge
        self.bits = {e.name: 2 << i for i, e in enumerate(self.evaluators)}
        self.hashes = {e.name: e.config_hash for e in self.evaluators}
        # A case evaluator's results are current while their case's config hash is unchanged.
        self.case_hashes = {e.name: e.hashes for e in self.evaluators if isinstance(e, CaseEvaluatorGroup)}
        self.variants = variants
        self.current: dict[str, int] = {}
        self.traces_judged = 0
        for line in _candidates(run_dir, plan, self.bits):
            key = self.current_key(line)
            if key is not None:
                self.current[key[0]] = self.current.get(key[0], 0) | self.bits[key[1]]

    def current_key(self, line: bytes) -> tuple[str, str] | None:
        """(trace hash, evaluator) of a candidate line of a merged evaluator judged with its
        current config, else None."""
        variant, evaluator = _variant_and_evaluator(line)
        if evaluator not in self.bits or variant not in self.variants:
            return None
        evaluator_hash, trace_hash = RESULTS.trailing(line, "evaluator_hash", "trace_hash")
        by_case = self.case_hashes.get(evaluator)
        if by_case is not None:
            expected = by_case.get(str(RESULTS.read_fields(line, "case_id")[0]))
        else:
            expected = self.hashes[evaluator]
        if trace_hash is None or expected is None or evaluator_hash != expected or _not_judged(line):
            return None
        return trace_hash, evaluator

    def selector(self, positions: dict[str, int], full: Sequence[int]) -> Any:
        """``select`` for the judging pass (runner/judge_workers.py): ``full`` evaluators on
        every trace, merged ones where they have no current result."""
        current, seen = self.current, self.SEEN
        merged = [(self.bits[e.name], positions[e.name]) for e in self.evaluators]

        def select(trace_hash: str) -> list[int]:
            bits = current.get(trace_hash, 0)
            if bits & seen:
                chosen = [position for _, position in merged]  # the same trace line twice: judged again
            else:
                current[trace_hash] = bits | seen
                chosen = [position for bit, position in merged if not bits & bit]
            if chosen:
                self.traces_judged += 1
            return [*full, *chosen]

        return select

    def keeps(self, evaluator: str, line: bytes, kept: set[str]) -> bool:
        """Whether ``line`` (a candidate of ``evaluator``) is kept: current, for a trace met
        by the judging pass, and the first such result of that trace."""
        key = self.current_key(line)
        if key is None or key[1] != evaluator or key[0] in kept:
            return False
        if not self.current.get(key[0], 0) & self.SEEN:
            return False  # its trace is gone (set aside, dropped, edited)
        kept.add(key[0])
        return True


def _not_judged(line: bytes) -> bool:
    """Whether a result line records that its evaluator could not judge."""
    if b'"error":null' in line or b'"error"' not in line:
        return False  # the common case, without parsing the line
    error = json.loads(line).get("error")  # an errored result: rare, so parsed whole
    return isinstance(error, dict) and error.get("type") in NOT_JUDGED_ERRORS


def _has_not_judged(run_dir: RunDirectory, evaluator: Evaluator, entry: EvaluatorEntry) -> bool:
    """Whether some result in the evaluator's file could not be judged (only an evaluator
    that does I/O can have one: a synchronous one's file is not read)."""
    if isinstance(evaluator, SyncEvaluator):
        return False
    return any(_not_judged(line) for line in entry_lines(run_dir, entry))


def _carry_legacy(run_dir: RunDirectory, judged: set[str]) -> dict[str, EvaluatorEntry]:
    """Store files for the results of a run from before the store that this evaluation does
    not judge (it was asked about some evaluators only), as they are."""
    outs: dict[str, NewResults] = {}
    try:
        for line in legacy_results(run_dir):
            name = _variant_and_evaluator(line)[1]
            if name not in judged:
                if name not in outs:
                    outs[name] = NewResults(run_dir)
                outs[name].write(line)
        return {name: EvaluatorEntry(out.finish(name), None, "", out.count) for name, out in outs.items()}
    except BaseException:
        for out in outs.values():
            out.discard()
        raise


def _variant_and_evaluator(line: bytes) -> tuple[str, str]:
    variant, evaluator = RESULTS.read_fields(line, "variant_name", "evaluator")
    return str(variant), str(evaluator)


async def _judge(judging: list[Evaluator], merging: _Merge | None, cases: CaseIndex, artifacts: ArtifactLoader,
                 run_dir: RunDirectory, variants: set[str], concurrency: int, processes: int | None,
                 stats: EvaluationStats, progress: Progress) -> Parts:
    """Judge the traces: every one by the evaluators judged in full, and by the merged ones
    where they have no current result; each evaluator's part files."""
    positions = {e.name: i for i, e in enumerate(judging)}
    select = None
    if merging is not None:
        select = merging.selector(positions, [positions[e.name] for e in judging if e not in merging.evaluators])
    if all(isinstance(e, SyncEvaluator) for e in judging):
        plan = SpanPlan(judging, cases, run_dir.traces, variants, artifacts)
        if select is None:
            return judge_in_processes(plan, run_dir, process_count(run_dir.traces, processes), stats, progress)
        return judge_selected(plan, run_dir, select, stats, progress)
    return await _judge_async(judging, select, merging, cases, artifacts, run_dir, variants, concurrency, stats,
                              progress)


async def _judge_async(
    evaluators: list[Evaluator], select: Any, merging: _Merge | None, cases: CaseIndex, artifacts: ArtifactLoader, run_dir: RunDirectory,
    variants: set[str], concurrency: int, stats: EvaluationStats, progress: Progress,
) -> Parts:
    """Judge with evaluators that do I/O (judges), in the async pool under the run's
    concurrency knob; traces and the hashes of their lines go in order."""
    files = [run_dir.temp_file("results") for _ in evaluators]
    outs = [path.open("wb", buffering=1 << 20) for path in files]
    positions = {e.name: i for i, e in enumerate(evaluators)}
    try:
        async def judge(item: tuple[Trace, str, list[Evaluator]]) -> None:
            trace, trace_hash, chosen = item
            artifact = artifacts.get(trace.case_id, trace.variant_name, trace.sample)
            judged = await judge_all(chosen, cases.get(trace.case_id), trace, artifact)
            if not judged and merging is not None:
                merging.traces_judged -= 1  # chosen only for case evaluators its case does not have
            for j, line in zip(judged, result_line_list(trace, judged, trace_hash=trace_hash)):
                # By name: a case evaluator's judgement names its case's member, not the group.
                outs[positions[j.evaluator.name]].write(line)
            count_judged(stats, trace, judged)
            progress.advance("results")

        await run_bounded(_to_judge(evaluators, select, run_dir.traces, variants), judge, concurrency)
    except BaseException:
        for out, path in zip(outs, files):
            out.close()
            path.unlink(missing_ok=True)
        raise
    for out in outs:
        out.close()
    return {e.name: [path] for e, path in zip(evaluators, files)}


def _to_judge(evaluators: list[Evaluator], select: Any, traces: Path,
              variants: set[str]) -> Iterator[tuple[Trace, str, list[Evaluator]]]:
    """(trace, its line's hash, the evaluators to judge it by) for each trace to judge."""
    for number, line in iter_raw_lines(traces):
        trace_hash = TRACES.content_hash(line)
        chosen = select(trace_hash) if select is not None else range(len(evaluators))
        if not chosen:
            continue
        trace = TRACES.decode(line, traces, number)
        if trace.variant_name in variants and not (trace.error and trace.error.type in UNJUDGED_ERRORS):
            yield trace, trace_hash, [evaluators[i] for i in chosen]


def _write(run_dir: RunDirectory, plan: _Plan, evaluator: Evaluator, variants: set[str], parts: Iterable[Path],
           merging: _Merge | None, stats: EvaluationStats) -> EvaluatorEntry:
    """The evaluator's new file in the store: the old results kept, then the new ones."""
    out = NewResults(run_dir)
    try:
        kept = 0
        merged = merging is not None and evaluator in merging.evaluators
        if merged or not plan.every_variant:
            seen: set[str] = set()
            for line in _candidates(run_dir, plan, [evaluator.name]):
                variant, name = _variant_and_evaluator(line)
                if name != evaluator.name:
                    continue
                # Results of variants outside this evaluation are not this evaluation's to judge.
                if variant not in variants or (merging is not None and merged and merging.keeps(name, line, seen)):
                    out.write(line)
                    kept += 1
        for part in parts:
            out.append(part)
        name = out.finish(evaluator.name)
    except BaseException:
        out.discard()
        raise
    stats.results_kept += kept
    # Every result is current for these traces only when every variant was judged.
    return EvaluatorEntry(name, evaluator.config_hash, plan.traces if plan.every_variant else "", out.count)
