"""Judge persisted traces: exactly the (trace, evaluator) pairs that have no current result.

The one way a trace is judged: ``evalh run``'s results stage, ``re-evaluate`` and
``retry-failed`` all call :func:`evaluate_traces`, which reads only the run directory
(cases snapshot + traces), never the system under test, so judging is cheap and
repeatable. An evaluator that raises fails its own result only.

Content is the only evidence. Every trace line has a hash of its own content
(``trace_hash``, store/records.py) and every result records the trace_hash it judged and
its evaluator's config hash: a result is current while its trace still has that hash and
its evaluator that config. Nothing else (inode, size, offset, mtime) is ever trusted, so a
run folder copied, moved, synced or edited by hand is judged correctly.

One plan, per evaluator:

- kept: the results store says every result of it was current for exactly these traces
  (the digest of traces.jsonl's complete lines) and this config: nothing is read;
- judged: every other evaluator, on each trace without a current result of it. Its results
  in the store are the candidates (not read when none can be current: its config changed,
  it is new, or re-judging was asked for); a candidate is kept when it records the hash of
  a trace still in the file, the evaluator's config hash, and a judgement (a result its
  judge could not give, models/result.py NOT_JUDGED_ERRORS, is never current).

A trace is judged in this process: by a plain loop when no evaluator to run does I/O, else
in the async pool under the run's concurrency knob. ``shard`` (a part of the traces file by
line position, runner/shards.py) judges only its lines; the others' current results are kept.

A results stage of several shards judges in several processes at once: each shard's
:func:`judge_shard` makes the same plan and judges its lines into part files of its own,
leaving the store as it is; then :func:`evaluate_traces` with ``judged`` (every shard and
its counts) takes the parts' results in place of judging, in the order one process judging
every line writes them, and writes the store as it always does.

The results store (store/results_store.py) then gets a new file for each evaluator that
changed, and results.jsonl is made again from the store.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.evaluators.base import Evaluator, SyncEvaluator
from evalh_pipeline.models import NOT_JUDGED_ERRORS, EvalCase, Trace
from evalh_pipeline.runner.case_evaluators import CaseEvaluatorGroup
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
from evalh_pipeline.runner.result_lines import Judged, raised, result_line_list, secrets_of
from evalh_pipeline.runner.shards import Shard, results_part, results_part_lock
from evalh_pipeline.store.case_index import CaseIndex
from evalh_pipeline.store.jsonl import complete_lines_digest, iter_raw_lines
from evalh_pipeline.store.locking import locked, under_run_lock
from evalh_pipeline.store.records import RESULTS, TRACES
from evalh_pipeline.store.results_store import (
    EvaluatorEntry,
    NewResults,
    commit,
    entry_lines,
    legacy_results,
    read_store,
)
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic
from evalh_pipeline.workspaces.artifacts import ArtifactLoader

# The names callers import from here.
__all__ = ["EvaluationStats", "TraceShard", "build_evaluators", "evaluate_traces", "evaluators_fingerprint",
           "judge_shard", "judge_trace", "last_evaluation"]

# The temp files this writer makes in the run folder (RunDirectory.temp_file purposes): a
# killed evaluation's leftovers, removed by the next one.
_TEMP_PURPOSES = ("results",)


class TraceShard(Protocol):
    """A part of the traces file (runner/shards.py ``Shard``): the lines it holds, by position."""

    @property
    def whole(self) -> bool: ...

    def holds(self, position: int) -> bool: ...


@under_run_lock
async def evaluate_traces(
    spec: EvalSpec,
    run_dir: RunDirectory,
    variant_names: list[str] | None = None,
    *,
    max_concurrency: int | None = None,
    progress: Progress | None = None,
    incremental: bool = True,
    traces_digest: str | None = None,
    traces_sealed_after: int | None = None,
    shard: TraceShard | None = None,
    pools_url: str | None = None,
    judged: Sequence[tuple[Shard, EvaluationStats]] | None = None,
) -> EvaluationStats:
    """Judge the traces of ``variant_names`` that have no current result (see the module docstring).

    By default only the (trace, evaluator) pairs without a current result are judged, and
    results of evaluators no longer configured are dropped; every other result line is kept
    byte for byte (``stats.results_kept``). With ``incremental=False`` every result of the
    variants is judged again.

    ``shard``: judge only the trace lines it holds (0-based positions in traces.jsonl);
    the current results of the other lines are kept. None: every line.

    ``traces_digest``: the digest of traces.jsonl's complete lines that the traces stage of
    the same launch kept as it wrote them (``TraceStats.traces_digest``), so the file is not
    read to hash it again; None (another launch, another process): hashed from the file.
    ``traces_sealed_after``: with that digest, the lines after this many are the ones that
    stage wrote and sealed (``TraceStats.traces_sealed_after``): their trace_hash is read off
    the line, not computed again. None: every line is hashed.
    ``pools_url``: the database the run's pools are counted in (see :func:`produce_traces`).
    ``judged``: every shard of the run with the counts of its :func:`judge_shard` (same
    ``variant_names`` and ``incremental``): their part files' results are taken instead of
    judging, then the parts are removed.
    """
    progress = progress or NoProgress()
    # This writer holds the run's lock: temp files of its purposes are a killed one's.
    run_dir.remove_stale_temp_files(*_TEMP_PURPOSES)
    limits = run_rate_limits(spec, run_dir, max_concurrency, pools_url)
    # The run's cases carry their own evaluators (runner/case_evaluators.py).
    evaluators = build_evaluators(spec, rate_limits=limits, cases=run_dir.cases)
    variants = set(variant_names if variant_names is not None else spec.variant_names)
    stats = EvaluationStats()
    plan = _plan(spec, run_dir, evaluators, variants, incremental=incremental, traces_digest=traces_digest,
                 shard=shard if shard is not None and not shard.whole else None)
    # Only as that stage left the file: the digest handed on says so.
    plan.sealed_after = traces_sealed_after if traces_digest else None
    if judged is not None:
        for _, counts in judged:
            stats.merge(counts)
            stats.traces_appended += counts.traces_appended
    await _evaluate(plan, spec, run_dir, variants, stats, concurrency=max_concurrency or spec.config.run.max_concurrency,
                    progress=progress, judged=[s for s, _ in judged] if judged is not None else None)
    for part, _ in judged or []:
        shutil.rmtree(results_part(run_dir, part), ignore_errors=True)
    if judged:
        with contextlib.suppress(OSError):  # kept while it holds something else (a torn tail set aside)
            results_part(run_dir, judged[0][0]).parent.rmdir()
    record_rate_limits(run_dir, limits, "results")
    write_atomic(run_dir.last_evaluation, json.dumps(asdict(stats)))
    return stats


async def judge_shard(
    spec: EvalSpec,
    run_dir: RunDirectory,
    variant_names: list[str] | None,
    shard: Shard,
    *,
    max_concurrency: int | None = None,
    progress: Progress | None = None,
    incremental: bool = True,
    pools_url: str | None = None,
) -> EvaluationStats:
    """Judge the trace lines ``shard`` (one of several) holds that have no current result, into
    part files of its own (runner/shards.py ``results_part``), leaving the results store as it
    is; the counts of what it judged. The shards of a run do this at the same time, each in a
    process of its own; :func:`evaluate_traces` with ``judged`` then puts the parts in."""
    progress = progress or NoProgress()
    folder = results_part(run_dir, shard)
    with locked(results_part_lock(run_dir, shard)):
        shutil.rmtree(folder, ignore_errors=True)  # a re-execution of the shard judges it again
        limits = run_rate_limits(spec, run_dir, max_concurrency, pools_url)
        evaluators = build_evaluators(spec, rate_limits=limits, cases=run_dir.cases)
        variants = set(variant_names if variant_names is not None else spec.variant_names)
        stats = EvaluationStats()
        plan = _plan(spec, run_dir, evaluators, variants, incremental=incremental, traces_digest=None, shard=shard)
        parts: dict[str, Path] = {}
        if plan.judge:
            cases = CaseIndex(run_dir.cases)
            progress.start("results", None)
            try:
                current = _Current(run_dir, plan, variants)
                parts = await _judge(plan.judge, current, cases, ArtifactLoader(spec, run_dir), run_dir, variants,
                                     max_concurrency or spec.config.run.max_concurrency, stats, progress)
                stats.traces_appended = current.traces_judged
            finally:
                cases.close()
            progress.finish("results")
        staging = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for index, evaluator in enumerate(plan.judge):
            os.replace(parts[evaluator.name], staging / f"{index}.jsonl")
        (staging / "evaluators.json").write_text(json.dumps([e.name for e in plan.judge]), encoding="utf-8")
        os.replace(staging, folder)  # whole or not at all: a shard killed mid-way left no part
        record_rate_limits(run_dir, limits, "results")
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
    shard: TraceShard | None  # the trace lines to judge (None: every one)
    entries: dict[str, EvaluatorEntry] | None  # the store as it was (None: no store)
    keep: dict[str, EvaluatorEntry] = field(default_factory=dict)  # evaluators left as they are
    judge: list[Evaluator] = field(default_factory=list)  # judged where they have no current result
    fresh: set[str] = field(default_factory=set)  # of judge: none of their results can be current
    order: list[str] = field(default_factory=list)  # the store's evaluators, in results.jsonl order
    dropped: bool = False  # an evaluator of the store is no longer configured
    sealed_after: int | None = None  # the lines after this many: sealed by this launch (see evaluate_traces)

    @property
    def whole(self) -> bool:
        """Whether every trace of the run is judged (every variant, no shard)."""
        return self.every_variant and self.shard is None

    def nothing_to_do(self, run_dir: RunDirectory) -> bool:
        return not self.judge and not self.dropped and self.entries is not None and run_dir.results.exists()


def _plan(spec: EvalSpec, run_dir: RunDirectory, evaluators: list[Evaluator], variants: set[str], *,
          incremental: bool, traces_digest: str | None, shard: TraceShard | None) -> _Plan:
    meta = run_dir.read_meta() if run_dir.exists() else {}
    run_variants = set(meta.get("variants") or []) | set(spec.variant_names)
    entries = read_store(run_dir)
    plan = _Plan(traces=traces_digest or complete_lines_digest(run_dir.traces), every_variant=variants >= run_variants,
                 shard=shard, entries=entries)
    configured = [e.name for e in spec.config.evaluators] + [e.name for e in evaluators
                                                             if isinstance(e, CaseEvaluatorGroup)]
    plan.order = configured + [name for name in (entries or {}) if name not in configured]

    def may_be_current(entry: EvaluatorEntry | None, config_hash: str) -> bool:
        """Whether a candidate result of the evaluator may be current (else its candidates are not read)."""
        if entries is None:
            return run_dir.results.exists()  # a run from before the store: its lines say
        # The store's file holds lines of its recorded config (and, after an evaluation of
        # some variants only, older lines of the others).
        return entry is not None and entry.evaluator_hash == config_hash

    for evaluator in evaluators:
        entry = (entries or {}).get(evaluator.name)
        if not incremental:
            plan.judge.append(evaluator)
            plan.fresh.add(evaluator.name)
        elif (entry is not None and plan.traces and entry.evaluator_hash == evaluator.config_hash
              and entry.traces == plan.traces and not _has_not_judged(run_dir, evaluator, entry)):
            plan.keep[evaluator.name] = entry
        else:
            plan.judge.append(evaluator)
            # Each result of a case evaluator records its own case's config hash: those of
            # unchanged cases may be current whatever the group's hash.
            if not (isinstance(evaluator, CaseEvaluatorGroup) and entry is not None) and not may_be_current(
                    entry, evaluator.config_hash):
                plan.fresh.add(evaluator.name)
    judged = {e.name for e in evaluators}
    for name, entry in (entries or {}).items():
        if name in judged:
            continue
        if name in configured:
            plan.keep[name] = entry  # not built: left as it is
        else:
            plan.dropped = True  # no longer configured: its results go
    return plan


async def _evaluate(plan: _Plan, spec: EvalSpec, run_dir: RunDirectory, variants: set[str], stats: EvaluationStats, *,
                    concurrency: int, progress: Progress, judged: list[Shard] | None = None) -> None:
    # Changed: judged with none of its results current, or a case evaluator whose config
    # changed on some of its cases.
    stats.evaluators_rejudged = sorted(
        e.name for e in plan.judge
        if e.name in plan.fresh or (isinstance(e, CaseEvaluatorGroup) and (entry := (plan.entries or {}).get(e.name)) is not None
                                    and entry.evaluator_hash != e.config_hash))
    stats.results_kept = sum(entry.results for entry in plan.keep.values())
    if plan.nothing_to_do(run_dir):
        return
    entries: dict[str, EvaluatorEntry] = dict(plan.keep)
    if plan.judge:
        cases = CaseIndex(run_dir.cases)
        parts: dict[str, Path] = {}
        progress.start("results", None)
        try:
            current = _Current(run_dir, plan, variants)
            if judged is None:
                parts = await _judge(plan.judge, current, cases, ArtifactLoader(spec, run_dir), run_dir, variants,
                                     concurrency, stats, progress, plan.sealed_after)
                stats.traces_appended = current.traces_judged
            else:
                parts = _gather(plan.judge, current, run_dir, judged)
            for evaluator in plan.judge:
                entries[evaluator.name] = _write(run_dir, plan, evaluator, variants, parts[evaluator.name], current,
                                                 stats)
        finally:
            for part in parts.values():
                part.unlink(missing_ok=True)
            cases.close()
        progress.finish("results")
    commit(run_dir, entries, plan.order)


def _candidates(run_dir: RunDirectory, plan: _Plan, evaluators: Iterable[str]) -> Iterator[bytes]:
    """Every result line of ``evaluators`` that may be current (and maybe others'): their
    files in the store (or, without a store, results.jsonl)."""
    if plan.entries is not None:
        for name in evaluators:
            if name in plan.entries:
                yield from entry_lines(run_dir, plan.entries[name])
    else:
        yield from legacy_results(run_dir)


# Picks, for a trace line (its position in the traces file, its hash), the positions of the
# judged evaluators to judge it by (None: every one).
_Select = Callable[[int, str], Sequence[int] | None]


class _Current:
    """Which (trace hash, evaluator) pairs have a current result, and what to judge.

    One bit per evaluator whose candidates are read, per trace hash: set when a candidate
    result of that evaluator records this trace hash and the evaluator's config hash. The
    judging pass (``selector``) marks each trace hash it meets (``MINE`` for a line it
    judges, ``OTHER`` for a line of another shard) and names the evaluators without a bit;
    the writing pass keeps one candidate per (trace hash, evaluator) whose trace was met.
    A trace hash is 32 hex digits: a dict entry per trace, never the traces themselves.
    """

    MINE, OTHER = 1, 2

    def __init__(self, run_dir: RunDirectory, plan: _Plan, variants: set[str]) -> None:
        # With a shard, every judged evaluator's candidates are read: other shards' lines keep theirs.
        self.read = [e for e in plan.judge if e.name not in plan.fresh or plan.shard is not None]
        self.fresh = plan.fresh
        self.shard = plan.shard
        self.bits = {e.name: 4 << i for i, e in enumerate(self.read)}
        self.hashes = {e.name: e.config_hash for e in self.read}
        # A case evaluator's results are current while their case's config hash is unchanged.
        self.case_hashes = {e.name: e.hashes for e in self.read if isinstance(e, CaseEvaluatorGroup)}
        self.variants = variants
        self.current: dict[str, int] = {}
        # Traces judged because an evaluator whose candidates were read had no current result
        # for them (appended by a resume, or changed): counted by the judging loops.
        self.traces_judged = 0
        self.incremental: frozenset[int] = frozenset()  # the positions of those evaluators
        for line in _candidates(run_dir, plan, self.bits):
            key = self.current_key(line)
            if key is not None:
                self.current[key[0]] = self.current.get(key[0], 0) | self.bits[key[1]]

    def current_key(self, line: bytes) -> tuple[str, str] | None:
        """(trace hash, evaluator) of a candidate line of a read evaluator judged with its
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

    def selector(self, positions: dict[str, int]) -> _Select | None:
        """``select`` for the judging pass: the fresh evaluators on every trace of the shard,
        the others where they have no current result; None: every evaluator on every trace."""
        if not self.read:
            return None
        current, mine, other, shard = self.current, self.MINE, self.OTHER, self.shard
        forced = [positions[name] for name in positions if name in self.fresh]
        self.incremental = frozenset(positions[e.name] for e in self.read if e.name not in self.fresh)
        read = [(self.bits[e.name], positions[e.name], e.name not in self.fresh) for e in self.read]

        def select(position: int, trace_hash: str) -> list[int]:
            bits = current.get(trace_hash, 0)
            if shard is not None and not shard.holds(position):
                current[trace_hash] = bits | other
                return []
            if bits & (mine | other):
                chosen = [p for _, p, judged in read if judged]  # the same trace line twice: judged again
            else:
                current[trace_hash] = bits | mine
                chosen = [p for bit, p, judged in read if judged and not bits & bit]
            return [*forced, *chosen]

        return select

    def count(self, chosen: Sequence[int] | None, judged: bool) -> None:
        """Count a trace judged by the evaluators at ``chosen`` (None: every one)."""
        if judged and chosen is not None and not self.incremental.isdisjoint(chosen):
            self.traces_judged += 1

    def keeps(self, evaluator: str, line: bytes, kept: set[str]) -> bool:
        """Whether ``line`` (a candidate of ``evaluator``) is kept: current, for a trace met
        by the judging pass and not judged again, and the first such result of that trace."""
        key = self.current_key(line)
        if key is None or key[1] != evaluator or key[0] in kept:
            return False
        met = self.current.get(key[0], 0)
        if not met & (self.OTHER if evaluator in self.fresh else self.MINE | self.OTHER):
            return False  # its trace is gone (set aside, dropped, edited), or judged again
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


def _variant_and_evaluator(line: bytes) -> tuple[str, str]:
    variant, evaluator = RESULTS.read_fields(line, "variant_name", "evaluator")
    return str(variant), str(evaluator)


async def _judge(evaluators: list[Evaluator], current: _Current, cases: CaseIndex, artifacts: ArtifactLoader,
                 run_dir: RunDirectory, variants: set[str], concurrency: int, stats: EvaluationStats,
                 progress: Progress, sealed_after: int | None = None) -> dict[str, Path]:
    """Judge the traces ``current`` selects, each evaluator's new results into a part file of
    its own (in trace order); evaluator -> its part. ``sealed_after``: see :func:`_to_judge`."""
    files = {e.name: run_dir.temp_file("results") for e in evaluators}
    select = current.selector({e.name: i for i, e in enumerate(evaluators)})
    try:
        with ExitStack() as stack:
            outs = [stack.enter_context(files[e.name].open("wb", buffering=1 << 20)) for e in evaluators]
            if all(isinstance(e, SyncEvaluator) for e in evaluators):
                _judge_sync(evaluators, current, select, cases, artifacts, run_dir.traces, variants,  # type: ignore[arg-type]
                            outs, stats, progress, sealed_after)
            else:
                await _judge_async(evaluators, current, select, cases, artifacts, run_dir.traces, variants, outs, concurrency,
                                   stats, progress, sealed_after)
    except BaseException:
        for path in files.values():
            path.unlink(missing_ok=True)
        raise
    return files


def _gather(evaluators: list[Evaluator], current: _Current, run_dir: RunDirectory,
            shards: list[Shard]) -> dict[str, Path]:
    """The shards' new results (:func:`judge_shard`) as :func:`_judge` gives them: a part file
    per evaluator, in the order one process writes them (trace order when no evaluator does
    I/O, else the order judged: here shard after shard), every trace met marked in ``current``
    as the judging pass marks it (so ``_write`` keeps the same candidates)."""
    names = [e.name for e in evaluators]
    folders = [results_part(run_dir, shard) for shard in shards]
    for folder in folders:
        try:
            recorded = json.loads((folder / "evaluators.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            recorded = None
        if recorded != names:  # a shard judged with other evaluators, or its part is gone
            raise RuntimeError(f"{folder} does not hold the results of {', '.join(names)}: "
                               "re-execute the run's results stage")
    files = {name: run_dir.temp_file("results") for name in names}
    select = current.selector({name: i for i, name in enumerate(names)})
    in_order = all(isinstance(e, SyncEvaluator) for e in evaluators)
    try:
        with ExitStack() as stack:
            outs = [stack.enter_context(files[name].open("wb", buffering=1 << 20)) for name in names]
            parts = [[_Lines(stack.enter_context((folder / f"{i}.jsonl").open("rb"))) for i in range(len(names))]
                     for folder in folders]
            for position, (_, line) in enumerate(iter_raw_lines(run_dir.traces)):
                if select is not None:
                    select(position, TRACES.content_hash(line))
                if not in_order:
                    continue
                owner = next(k for k, shard in enumerate(shards) if shard.holds(position))
                key = _cell(TRACES.read_fields(line, "case_id", "variant_name", "sample"))
                for out, lines in zip(outs, parts[owner]):
                    while lines.head is not None and lines.key == key:
                        out.write(lines.take())
            for shard_parts in parts:  # the rest: every line, when the order is the order judged
                for out, lines in zip(outs, shard_parts):
                    while lines.head is not None:
                        out.write(lines.take())
    except BaseException:
        for path in files.values():
            path.unlink(missing_ok=True)
        raise
    return files


def _cell(fields: Sequence[Any]) -> tuple[str, str, int]:
    return str(fields[0]), str(fields[1]), int(fields[2] or 0)


class _Lines:
    """A shard's part file of one evaluator, read a line ahead (and that line's cell)."""

    def __init__(self, source: Any) -> None:
        self._source = source
        self.head: bytes | None = None
        self.key: tuple[str, str, int] | None = None
        self.take()

    def take(self) -> bytes:
        """The line ahead; the next one comes ahead."""
        line = self.head
        self.head = self._source.readline() or None
        self.key = _cell(RESULTS.read_fields(self.head, "case_id", "variant_name", "sample")) if self.head else None
        return line or b""


def _to_judge(select: _Select | None, traces: Path, variants: set[str], skim: bool,
              decode: Callable[[bytes, Path, int], Trace],
              sealed_after: int | None) -> Iterator[tuple[Trace, str, Sequence[int] | None]]:
    """(trace, its line's hash, the positions of the evaluators to judge it by; None: every
    one) for each trace to judge, in the traces file's order. The lines after the first
    ``sealed_after`` were sealed by this launch's traces stage: their hash is read, not
    computed again (None: every line's is computed)."""
    trusted = sealed_after if sealed_after is not None else float("inf")
    for position, (number, line) in enumerate(iter_raw_lines(traces)):
        # The variant read off the line's head skips other variants' traces without parsing them.
        if skim and TRACES.read_fields(line, "variant_name")[0] not in variants:
            continue
        trace_hash = TRACES.sealed_hash(line) if number > trusted else TRACES.content_hash(line)
        chosen = select(position, trace_hash) if select is not None else None
        if chosen is not None and not chosen:
            continue  # every evaluator has a current result for it: not even decoded
        trace = decode(line, traces, number)
        if trace.variant_name in variants and not (trace.error is not None and trace.error.type in UNJUDGED_ERRORS):
            yield trace, trace_hash, chosen


async def _judge_async(evaluators: list[Evaluator], current: _Current, select: _Select | None, cases: CaseIndex,
                       artifacts: ArtifactLoader, traces: Path, variants: set[str], outs: list[Any],
                       concurrency: int, stats: EvaluationStats, progress: Progress, sealed_after: int | None) -> None:
    """Judge with evaluators of which some do I/O (judges), in the async pool under the
    run's concurrency knob."""
    positions = {e.name: i for i, e in enumerate(evaluators)}

    async def judge(item: tuple[Trace, str, Sequence[int] | None]) -> None:
        trace, trace_hash, chosen = item
        artifact = artifacts.get(trace.case_id, trace.variant_name, trace.sample)
        judged = await judge_all(evaluators if chosen is None else [evaluators[i] for i in chosen],
                                 cases.get(trace.case_id), trace, artifact)
        for j, line in zip(judged, result_line_list(trace, judged, trace_hash=trace_hash)):
            # By name: a case evaluator's judgement names its case's member, not the group.
            outs[positions[j.evaluator.name]].write(line)
        count_judged(stats, trace, judged)
        current.count(chosen, bool(judged))
        progress.advance("results")

    await run_bounded(_to_judge(select, traces, variants, False, TRACES.decode, sealed_after), judge, concurrency)


# Passed to evaluators that declare they never read the case (Evaluator.reads_case).
NO_CASE = EvalCase(id="", input={})
# What judging reads of every trace besides what the evaluators declare.
_IDENTITY_FIELDS = frozenset({"run_id", "case_id", "variant_name", "sample", "error"})


def trace_decoder(evaluators: Sequence[Evaluator]) -> Callable[[bytes | str, Path, int], Trace]:
    """How to decode the traces ``evaluators`` judge: only the fields they read when every one
    declares them (Evaluator.trace_fields), so re-judging one cheap evaluator on a large run
    does not validate whole traces; else whole traces."""
    declared = [e.trace_fields for e in evaluators]
    if not declared or any(fields is None for fields in declared):
        return TRACES.decode
    return TRACES.projection(_IDENTITY_FIELDS.union(*declared))  # type: ignore[arg-type]


def _judge_sync(evaluators: list[SyncEvaluator], current: _Current, select: _Select | None, cases: CaseIndex, artifacts: ArtifactLoader,
                traces: Path, variants: set[str], outs: list[Any], stats: EvaluationStats, progress: Progress,
                sealed_after: int | None) -> None:
    """Judge with evaluators that do no I/O: a plain loop, no coroutine per trace."""
    decode = trace_decoder(evaluators)
    # A projection decodes no faster than the variant is read off the line: no pre-check then.
    skim = decode == TRACES.decode
    reads_case = any(e.reads_case for e in evaluators)
    secrets = secrets_of(evaluators)
    everyone = range(len(evaluators))
    tallies: dict[str, list[list[int]]] = {}
    now, utc = datetime.now, timezone.utc
    unreported = 0  # progress goes out in batches: a bar update per trace was a visible cost
    for trace, trace_hash, chosen in _to_judge(select, traces, variants, skim, decode, sealed_after):
        current.count(chosen, True)
        if chosen is None:
            chosen = everyone
        case = cases.get(trace.case_id) if reads_case else NO_CASE
        artifact = artifacts.get(trace.case_id, trace.variant_name, trace.sample)
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
    # Tallied per pass and folded in once: a dict walk per result was a visible cost.
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


def _write(run_dir: RunDirectory, plan: _Plan, evaluator: Evaluator, variants: set[str], part: Path,
           current: _Current, stats: EvaluationStats) -> EvaluatorEntry:
    """The evaluator's new file in the store: the old results kept, then the new ones."""
    out = NewResults(run_dir)
    try:
        kept = 0
        read = evaluator.name in current.bits
        if read or not plan.every_variant:
            seen: set[str] = set()
            for line in _candidates(run_dir, plan, [evaluator.name]):
                variant, name = _variant_and_evaluator(line)
                if name != evaluator.name:
                    continue
                # Results of variants outside this evaluation are not this evaluation's to judge.
                if variant not in variants or (read and current.keeps(name, line, seen)):
                    out.write(line)
                    kept += 1
        out.append(part)
        name = out.finish(evaluator.name)
    except BaseException:
        out.discard()
        raise
    stats.results_kept += kept
    # Every result is current for these traces only when every trace was judged.
    return EvaluatorEntry(name, evaluator.config_hash, plan.traces if plan.whole else "", out.count)
