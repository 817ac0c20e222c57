"""Produce the traces of a run: call each system once per missing cell, persist each trace.

Order of operations only; what a system is, and how it is called, lives in ``systems/``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.enrichers.base import EnricherContext, TraceEnricher, build_enrichers, enrich_trace
from evalh_pipeline.models import RunVariant, Trace, TraceError
from evalh_pipeline.models.versioning import SCHEMA_VERSION
from evalh_pipeline.runner.cells import Cell, iter_cells, planned_cases
from evalh_pipeline.runner.deadlines import Deadlines
from evalh_pipeline.runner.hashes import CellHashes
from evalh_pipeline.runner.policies import CostBudget, RetryPolicy
from evalh_pipeline.runner.rate_limits import record_rate_limits, run_rate_limits
from evalh_pipeline.common.ratelimits import Limiter, RateLimitAnswer, RateLimits, UnknownPool, call_within_limit
from evalh_pipeline.common.retrying import retry_on_result
from evalh_pipeline.runner.pool import run_bounded
from evalh_pipeline.common.pricing import Pricer
from evalh_pipeline.store.recording import TraceRecord, record_line, trace_line
from evalh_pipeline.runner.reuse import reuse_traces
from evalh_pipeline.runner.shards import (
    WHOLE, Shard, Where, done_cells, part_path, shard_case_ids, writer_lock,
)
from evalh_pipeline.runner.progress import NoProgress, Progress
from evalh_pipeline.runner.capture import apply_capture
from evalh_pipeline.runner.tool_views import apply_tool_views
from evalh_pipeline.store.jsonl import JsonlAppender
from evalh_pipeline.store.records import traces_appender
from evalh_pipeline.common.masking import mask_json_line
from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.outputs.sync import annotate_trace, build_stores
from evalh_pipeline.systems.base import (
    AdapterError, RaisedBySystem, SystemAdapter, SystemContext, SystemResponse, Workspace,
)
from evalh_pipeline.systems.registry import SYSTEMS
from evalh_pipeline.systems.response import checked_response
from evalh_pipeline.workspaces.accounting import WorkspaceAccountingError
from evalh_pipeline.workspaces.base import WorkspaceAdapter, WorkspaceContext
from evalh_pipeline.workspaces.ledger import record_accounting
from evalh_pipeline.workspaces.registry import WORKSPACES


@dataclass
class TraceStats:
    """What one pass of the trace runner did."""

    cells_total: int = 0
    cells_skipped: int = 0
    cells_run: int = 0
    cells_errored: int = 0
    cells_reused: int = 0  # of cells_skipped: traces copied from the run given to --reuse
    errors_by_type: dict[str, int] = field(default_factory=dict)
    # variant -> {"run": n, "errored": n}, for this pass only
    by_variant: dict[str, dict[str, int]] = field(default_factory=dict)
    # Workspace runs only: artifacts published and the bytes accounting of this pass.
    artifacts: int = 0
    artifact_bytes: int = 0
    workspace: dict[str, int] = field(default_factory=dict)
    # The digest of traces.jsonl's complete lines as this pass left them (store/jsonl.py
    # complete_lines_digest), kept by its appender: the later stages of the same launch take
    # it instead of reading the file again. "" when not known (the pass failed to write).
    traces_digest: str = ""
    # With that digest, the lines of traces.jsonl after this many (line numbers: blank ones
    # counted) are this pass's, each sealed by its appender with the hash of its content as
    # written: the results stage of the same launch reads their trace_hash instead of hashing
    # them again. None: not known.
    traces_sealed_after: int | None = None

    def count(self, variant_name: str, error: TraceError | None) -> None:
        """Count one cell of ``variant_name`` that ran (``error``: its trace's, None: none)."""
        counts = self.by_variant.setdefault(variant_name, {"run": 0, "errored": 0})
        counts["run"] += 1
        self.cells_run += 1
        if error is not None:
            counts["errored"] += 1
            self.cells_errored += 1
            self.errors_by_type[error.type] = self.errors_by_type.get(error.type, 0) + 1

    def add(self, other: TraceStats) -> None:
        """Add the counts of another shard's pass of the same run (its digest is not this file's)."""
        for name in ("cells_total", "cells_skipped", "cells_run", "cells_errored", "artifacts", "artifact_bytes"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cells_reused = max(self.cells_reused, other.cells_reused)  # the run's one reuse, seen by each shard
        for kind, count in other.errors_by_type.items():
            self.errors_by_type[kind] = self.errors_by_type.get(kind, 0) + count
        for variant, counts in other.by_variant.items():
            mine = self.by_variant.setdefault(variant, {"run": 0, "errored": 0})
            for kind, count in counts.items():
                mine[kind] = mine.get(kind, 0) + count
        for kind, count in other.workspace.items():
            self.workspace[kind] = self.workspace.get(kind, 0) + count


async def produce_traces(
    spec: EvalSpec,
    run_dir: RunDirectory,
    variant_names: list[str] | None = None,
    *,
    max_concurrency: int | None = None,
    progress: Progress | None = None,
    reuse_from: RunDirectory | None = None,
    pools_url: str | None = None,
    shard: Shard = WHOLE,
) -> TraceStats:
    """Run every cell of ``variant_names`` that has no trace yet (so a killed run resumes).

    Judging is the results stage's (runner/evaluation.py). With ``reuse_from``, the unchanged traces
    of that earlier run are copied in first (runner/reuse.py), so only new or changed cells
    call the system. ``pools_url``: the database the run's pools are counted in for every
    process (runner/rate_limits.py; None: in this process). With a ``shard`` of several,
    only that shard's cells run, into its part file (runner/shards.py), holding that file's
    lock rather than the run's.
    """
    with locked(writer_lock(run_dir, shard)):
        return await _produce_traces(spec, run_dir, variant_names, max_concurrency=max_concurrency, progress=progress,
                                     reuse_from=reuse_from, pools_url=pools_url, shard=shard)


async def _produce_traces(
    spec: EvalSpec, run_dir: RunDirectory, variant_names: list[str] | None, *, max_concurrency: int | None,
    progress: Progress | None, reuse_from: RunDirectory | None, pools_url: str | None, shard: Shard,
) -> TraceStats:
    progress = progress or NoProgress()
    variants = [v for v in spec.variants if variant_names is None or v.name in variant_names]
    run_cfg = spec.config.run
    concurrency = max_concurrency or run_cfg.max_concurrency
    samples = run_cfg.samples_per_case
    reused = reuse_traces(spec, run_dir, reuse_from) if reuse_from is not None else None
    done = done_cells(run_dir, {v.name for v in variants})
    if not shard.whole:  # the cells of the other shards are theirs to count
        mine = shard_case_ids(run_dir.cases, shard)
        done = {key for key in done if key[0] in mine}
        part_path(run_dir, shard).parent.mkdir(exist_ok=True)
    where = Where.here(shard).as_extra()  # extra.executor of every trace of this pass
    phase = "traces" if shard.whole else f"traces {shard.label}"  # a bar per shard where they share one
    stats = TraceStats(cells_total=sum(planned_cases(run_dir.cases, [v.name for v in variants], shard).values()) * samples)
    stats.cells_skipped = len(done)
    stats.cells_reused = sum(reused.by_variant.get(v.name, 0) for v in variants) if reused else 0
    progress.start(phase, stats.cells_total)
    progress.advance(phase, len(done))

    hashes = CellHashes.for_run(spec, run_dir, variants)
    context = SystemContext(eval_dir=spec.eval_dir, max_concurrency=concurrency, secret_values=spec.secret_values,
                            env=spec.settings.env, versions=hashes.versions)
    adapters: dict[str, SystemAdapter | AdapterError] = {}
    enrichers: dict[str, list[TraceEnricher | Exception]] = {}
    # One limiter per rate limit, shared by the variants that meet it.
    limits = run_rate_limits(spec, run_dir, concurrency, pools_url)
    # Whatever started is closed however this ends: also when starting a later part, or
    # setting up the pass, fails or is cancelled (the inner finally closes them first).
    try:
        for variant in variants:
            adapters[variant.name] = await _start_adapter(variant, context)
        limiters = {v.name: _limiter(spec, limits, v, adapters) for v in variants}
        per_variant = (
            {v.name: asyncio.Semaphore(run_cfg.per_variant_concurrency) for v in variants}
            if run_cfg.per_variant_concurrency else None
        )
        retry = RetryPolicy(run_cfg.retry)
        budget = CostBudget(run_cfg.cost_limit_usd)
        pricer = Pricer.for_path(spec.price_table_path)
        workspaces = _workspace_adapter(spec, run_dir)
        if workspaces is not None:
            await asyncio.to_thread(workspaces.recover_stale)
        enrichers.update(await _start_enrichers(spec, [v.name for v in variants]))
        stores = build_stores(spec)  # only annotate() here: the stores take the run after the stage
        capture = spec.config.trace.capture if spec.config.trace is not None else []

        deadlines = Deadlines()  # the cells' timeouts, on one timer

        run_id = run_dir.run_id

        def one_cell(cell: Cell) -> Awaitable[TraceRecord]:
            """The cell's run (a coroutine handed on as it is: no frame of its own per cell)."""
            adapter = adapters[cell.variant.name]
            limiter = limiters[cell.variant.name]
            stamps = hashes.of(cell)  # built into the record: cheaper than setting three fields after
            if workspaces is None or isinstance(adapter, AdapterError):
                return _run_cell(cell, run_id, adapter, retry, budget, pricer, stamps, deadlines, limiter=limiter)
            return _run_in_workspace(cell, run_id, adapter, retry, budget, pricer, workspaces, stamps, deadlines,
                                     limiter)

        unreported = 0  # cells finished since progress last heard of them (see PROGRESS_BATCH)

        def report() -> None:
            nonlocal unreported
            if unreported:
                progress.advance(phase, unreported)
                unreported = 0

        with traces_appender(part_path(run_dir, shard)) as out:
            async def work(cell: Cell) -> None:
                nonlocal unreported
                if per_variant is None:
                    record = await one_cell(cell)
                else:
                    async with per_variant[cell.variant.name]:
                        record = await one_cell(cell)
                chain = enrichers.get(cell.variant.name)
                if record["messages"] or chain or capture or stores:
                    # The plugins (and the views derived from messages) take the model, a
                    # boundary: built here only for the cells that meet one.
                    trace = Trace.model_validate(record)
                    apply_tool_views(trace)
                    # Post-capture, before the trace is persisted: evaluators and stores see the final trace.
                    if chain:
                        await enrich_trace(chain, cell.case, trace)
                    apply_capture(trace, capture)
                    trace.extra["executor"] = where
                    annotate_trace(stores, trace)
                    # Serializing (and capping) belongs to the cell: a bad output errors it, not the run.
                    line, trace = trace_line(trace)
                    error = trace.error
                else:
                    record["extra"] = {**record["extra"], "executor": where}
                    line, error = record_line(record)
                # Stored masked: judged as stored, so re-evaluation gives the same verdicts.
                out.write(mask_json_line(line, spec.secret_values))
                stats.count(cell.variant.name, error)
                unreported += 1
                if unreported >= PROGRESS_BATCH:
                    report()

            # The buffered lines reach the kernel at least this often while cells run.
            # ... and progress hears of the finished cells at least as often.
            flusher = asyncio.create_task(_flush_every(out, FLUSH_SECONDS, report))
            try:
                # Variants behind different limits get lanes of their own, so a slow limit's
                # queue never holds back the others; the limiters' gate keeps the run's
                # max_concurrency over all of them.
                groups = _lane_groups(variants, limiters, limits)
                await asyncio.gather(*(run_bounded(iter_cells(run_dir.cases, group, samples, done, shard), work,
                                                   concurrency)
                                       for group in groups))
            finally:
                deadlines.close()
                flusher.cancel()
                try:
                    out.close()  # flush + fsync: every trace of this pass durable, its digest known
                finally:
                    stats.traces_digest = out.digest if shard.whole else ""  # a part's is not traces.jsonl's
                    stats.traces_sealed_after = out.lines_found if stats.traces_digest else None
                    await _close_started(adapters, enrichers)
                    record_rate_limits(run_dir, limits, "traces")
                    if workspaces is not None:
                        totals = workspaces.totals
                        stats.artifacts, stats.artifact_bytes = totals.artifacts, totals.copied_bytes + totals.moved_bytes
                        stats.workspace = totals.as_dict()
                        record_accounting(run_dir.path, totals)
    finally:
        await _close_started(adapters, enrichers)
    report()  # the last batch
    progress.finish(phase)
    if workspaces is not None and (problem := workspaces.totals.mismatch()):
        raise WorkspaceAccountingError(problem)
    return stats


# Seconds a finished cell's trace may wait in the appender's buffer (a kill -9 loses those).
FLUSH_SECONDS = 1.0
# Finished cells reported to the progress at once (or at the next flush, whichever comes
# first): a rich bar's advance costs a few percent of a trivial cell's CPU.
PROGRESS_BATCH = 64


async def _flush_every(out: JsonlAppender, seconds: float, report: Callable[[], None]) -> None:
    """Flush ``out`` and ``report`` the progress every ``seconds`` until cancelled. A failed
    write is raised by the cells' next write (the appender keeps it), not lost in this task."""
    while True:
        await asyncio.sleep(seconds)
        report()
        try:
            out.flush()
        except OSError:
            return


async def _close_started(adapters: dict[str, SystemAdapter | AdapterError],
                         enrichers: dict[str, list[TraceEnricher | Exception]]) -> None:
    """Close the adapters and enrichers that started, once: emptied as they are closed."""
    for adapter in adapters.values():
        if isinstance(adapter, SystemAdapter):
            await _close_quietly(adapter)
    adapters.clear()
    for chain in enrichers.values():
        for enricher in chain:
            if isinstance(enricher, TraceEnricher):
                await _close_quietly(enricher)
    enrichers.clear()


async def _start_enrichers(spec: EvalSpec, variant_names: list[str]) -> dict[str, list[TraceEnricher | Exception]]:
    """Each variant's enricher chain, started; one that cannot start is an error on each trace."""
    context = EnricherContext(eval_dir=spec.eval_dir, secret_values=spec.secret_values)
    chains: dict[str, list[TraceEnricher | Exception]] = {}
    for name in variant_names:
        configs = spec.enrichers.get(name, ())
        chain: list[TraceEnricher | Exception] = []
        for enricher in build_enrichers(configs, context):
            try:
                await enricher.start()
                chain.append(enricher)
            except Exception as exc:  # noqa: BLE001 - an enricher never fails the run
                failed = RuntimeError(f"did not start: {type(exc).__name__}: {exc}")
                failed.enricher_name = enricher.name  # type: ignore[attr-defined]
                chain.append(failed)
        if chain:
            chains[name] = chain
    return chains


def _workspace_adapter(spec: EvalSpec, run_dir: RunDirectory) -> WorkspaceAdapter | None:
    workspace = spec.config.workspace
    if workspace is None:
        return None
    context = WorkspaceContext(eval_dir=spec.eval_dir, runs_root=str(spec.runs_root), run_dir=run_dir.path,
                               run_id=run_dir.run_id, secret_values=spec.secret_values, env=spec.settings.env)
    return WORKSPACES.get(workspace.type)(workspace.model_dump(), context)


def _lane_groups(variants: list[RunVariant], limiters: dict[str, Limiter | None],
                 limits: RateLimits) -> list[list[RunVariant]]:
    """The variants by limit, in order; one group when they share one limit (or none). With
    several groups, a variant with no limit is given one that only counts its calls against
    the limiters' gate (the run's max_concurrency over all groups' lanes)."""
    groups: dict[int, list[RunVariant]] = {}
    for variant in variants:
        groups.setdefault(id(limiters[variant.name]), []).append(variant)
    if len(groups) > 1:  # each group's lanes: the gate of the limiters bounds the run as a whole
        for variant in variants:
            if limiters[variant.name] is None:
                limiters[variant.name] = limits.unlimited(variant.name)
    return list(groups.values())


def _limiter(spec: EvalSpec, limits: RateLimits, variant: RunVariant,
             adapters: dict[str, SystemAdapter | AdapterError]) -> Limiter | None:
    """The limiter of a variant's calls: its pool's, else its endpoint's (None: no limit known)."""
    adapter = adapters[variant.name]
    if isinstance(adapter, AdapterError):
        return None
    scope = adapter.rate_limit_scope()
    try:
        return limits.scoped(spec.variant_pools.get(variant.name), *(scope or (None, None)))
    except UnknownPool as exc:  # checked when the eval loads; a spec built otherwise fails its cells
        adapters[variant.name] = AdapterError(str(exc), type=START_ERROR)
        return None


async def _run_in_workspace(
    cell: Cell, run_id: str, adapter: SystemAdapter, retry: RetryPolicy, budget: CostBudget, pricer: Pricer,
    workspaces: WorkspaceAdapter, stamps: dict[str, str | None], deadlines: Deadlines, limiter: Limiter | None,
) -> TraceRecord:
    """prepare -> run -> collect -> cleanup; cleanup runs whatever happened before it."""
    try:
        workspace = await asyncio.to_thread(workspaces.prepare, cell.case, cell.variant, cell.sample)
    except Exception as exc:  # noqa: BLE001 - a cell whose workspace fails errors alone
        failed = AdapterError(f"workspace not prepared: {type(exc).__name__}: {exc}", type="workspace_error")
        return await _run_cell(cell, run_id, failed, retry, budget, pricer, stamps, deadlines)
    try:
        async def reset() -> None:
            await asyncio.to_thread(workspaces.reset, workspace)

        record = await _run_cell(cell, run_id, adapter, retry, budget, pricer, stamps, deadlines, workspace, reset,
                                 limiter=limiter)
        try:
            # A crashed system still gets its artifacts: what it changed before failing matters.
            # A timed-out system that could not be stopped may still write: freeze a copy first.
            error = record["error"]
            may_run = error is not None and error.type == "timeout" and not adapter.stops_on_timeout
            await asyncio.to_thread(functools.partial(workspaces.collect_artifacts, workspace, system_may_run=may_run))
        except Exception as exc:  # noqa: BLE001
            message = f"artifacts not collected: {type(exc).__name__}: {exc}"
            if record["error"] is None:
                record["error"] = TraceError(type="workspace_error", message=message)
            else:
                record["extra"]["workspace_error"] = message
    finally:
        # Shielded: a cancelled run still removes the workspace (the thread finishes anyway).
        await asyncio.shield(asyncio.to_thread(workspaces.cleanup, workspace))
    return record


START_ERROR = "config_error"


def start_errors(traces_path: Path) -> dict[str, str]:
    """variant -> message of the variants whose system could not start (``config_error`` traces)."""
    found: dict[str, str] = {}
    if not traces_path.exists():
        return found
    from evalh_pipeline.store.jsonl import iter_lines

    for _, line in iter_lines(traces_path):
        if START_ERROR not in line:  # cheap filter before parsing
            continue
        record = json.loads(line)
        error = record.get("error") or {}
        if error.get("type") == START_ERROR:
            found.setdefault(record["variant_name"], error.get("message", ""))
    return found


async def _start_adapter(variant: RunVariant, context: SystemContext) -> SystemAdapter | AdapterError:
    # A system that cannot start (a target that does not import, a missing cwd) fails its
    # cells with `config_error`, not the run; `evalh run` then exits non-zero, as eval-harness does.
    try:
        adapter = SYSTEMS.get(variant.adapter)(variant, context)
        await adapter.start()
        return adapter
    except AdapterError as exc:
        return AdapterError(str(exc), type=START_ERROR)
    except asyncio.CancelledError as exc:
        if _cancelled_from_outside():
            raise
        return AdapterError(f"{variant.adapter} adapter failed to start: {type(exc).__name__}: {exc}", type=START_ERROR)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - an import that calls sys.exit() fails its variant only
        return AdapterError(f"{variant.adapter} adapter failed to start: {type(exc).__name__}: {exc}", type=START_ERROR)


async def _close_quietly(adapter: SystemAdapter | TraceEnricher) -> None:
    try:
        await adapter.close()
    except Exception:  # noqa: BLE001, S110 - closing must not lose the traces already written
        pass


def _now() -> datetime:
    return datetime.now(timezone.utc)


async def _run_cell(
    cell: Cell, run_id: str, adapter: SystemAdapter | AdapterError, retry: RetryPolicy, budget: CostBudget,
    pricer: Pricer, stamps: dict[str, str | None], deadlines: Deadlines, workspace: Workspace | None = None,
    reset: Callable[[], Awaitable[None]] | None = None, *, limiter: Limiter | None = None,
) -> TraceRecord:
    """One cell -> its trace as a :data:`TraceRecord` (with the cell's hashes, ``stamps``).
    Never raises: every failure becomes its ``error``.

    ``reset`` runs before each retry (a workspace is re-seeded, so no attempt sees another's edits).
    With a ``limiter``, each attempt goes through the rate limit (:func:`_call_limited`).
    """
    started = _now()
    error: TraceError | None = None
    attempt = 0
    sent: list[datetime] = []  # when each request that went through the limit was sent
    if budget.exhausted():
        response = SystemResponse()
        error = TraceError(type="cost_limit", message=f"run cost limit ${budget.limit_usd} reached; cell not started")
    elif isinstance(adapter, AdapterError):
        response = SystemResponse()
        error = TraceError(type=adapter.type, message=str(adapter))
    elif retry.backoff.attempts <= 1 and limiter is None:
        response, error, _ = await _call(cell, adapter, workspace, deadlines)  # nothing to wrap
        attempt = 1
    elif retry.backoff.attempts <= 1 and limiter is not None:
        response, error = await _call_limited(cell, adapter, workspace, deadlines, limiter, reset, sent)
        attempt = 1
    else:
        async def one_attempt(number: int) -> tuple[SystemResponse, TraceError | None]:
            if number > 1 and reset is not None:
                await reset()
            if limiter is not None:
                return await _call_limited(cell, adapter, workspace, deadlines, limiter, reset, sent)
            return (await _call(cell, adapter, workspace, deadlines))[:2]

        (response, error), attempt = await retry_on_result(one_attempt, retry.backoff,
                                                           lambda outcome: retry.retries(outcome[1]))
    finished = _now()
    if sent and (response.metrics.custom.get("rate_limited") or response.metrics.custom.get("queue_wait_ms")):
        started = sent[-1]  # the request that answered: waiting on the limit is queue_wait_ms
    # Cost from tokens when the system reported none, before the budget and the trace see it.
    pricer.price(response.metrics, cell.variant)
    budget.add(response.metrics.cost_usd)
    if attempt > 1:
        response.metrics.custom["attempts"] = attempt
    # The Trace's fields in its order, holding the checked response's values as they are:
    # encoded to its line without building a Trace (store/recording.py record_line).
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "case_id": cell.case.id,
        "variant_name": cell.variant.name,
        "sample": cell.sample,
        "started_at": response.started_at or started,
        "finished_at": response.finished_at or finished,
        "latency_ms": (response.latency_ms if response.latency_ms is not None
                       else round((finished - started).total_seconds() * 1000)),
        "input": cell.case.input,
        "output": response.output,
        "messages": response.messages,
        "tool_calls": response.tool_calls,
        "tool_results": response.tool_results,
        "metrics": response.metrics,
        "error": error,
        "extra": response.extra,
        **stamps,
        "reused_from": None,
        "trace_hash": None,
    }


# One call's outcome: the response, its error, and (rate_limited) the wait the server asked for.
_Called = tuple[SystemResponse, TraceError | None, float | None]


async def _call_limited(cell: Cell, adapter: SystemAdapter, workspace: Workspace | None, deadlines: Deadlines,
                        limiter: Limiter, reset: Callable[[], Awaitable[None]] | None,
                        sent: list[datetime]) -> tuple[SystemResponse, TraceError | None]:
    """One attempt of a cell through its rate limit: sent when the limit allows, and sent again
    after each rate limit while the cell's timeout and the run's budget allow. A cell that
    still cannot get through errors ``rate_limited`` with the server's last answer."""
    tries = 0

    async def attempt(seconds_left: float) -> _Called:
        nonlocal tries
        tries += 1
        if tries > 1 and reset is not None:
            await reset()  # a workspace is re-seeded before the request is sent again
        sent.append(_now())
        return await _call(cell, adapter, workspace, deadlines, seconds_left)

    def answer_of(called: _Called) -> tuple[RateLimitAnswer | None, str]:
        error = called[1]
        if error is None or error.type != "rate_limited":
            return None, ""
        return RateLimitAnswer(called[2]), error.message

    def tokens_of(called: _Called) -> int | None:
        metrics = called[0].metrics
        if metrics.token_input is None and metrics.token_output is None:
            return None
        return (metrics.token_input or 0) + (metrics.token_output or 0)

    outcome = await call_within_limit(limiter, attempt, answer_of, timeout=cell.variant.timeout_seconds,
                                      retry=limiter.retry, tokens_of=tokens_of)
    error: TraceError | None
    if outcome.result is None:
        last = f"; last answer: {limiter.last_message}" if limiter.last_message else ""
        response, error = SystemResponse(), TraceError(type="rate_limited", message=f"not sent: {outcome.gave_up}{last}")
    else:
        response, error, _ = outcome.result
        if error is not None and error.type == "rate_limited":
            why = f"; {outcome.gave_up}" if outcome.gave_up else ""
            error.message += (f" (rate limited {outcome.rate_limited} time(s), {outcome.waited_s:.1f} s waited on "
                              f"{limiter.label}{why})")
    if outcome.rate_limited:
        response.metrics.custom["rate_limited"] = outcome.rate_limited
    if outcome.waited_s >= 0.001:
        response.metrics.custom["queue_wait_ms"] = round(outcome.waited_s * 1000)
    return response, error


async def _call(cell: Cell, adapter: SystemAdapter, workspace: Workspace | None,
                deadlines: Deadlines, seconds_left: float | None = None) -> _Called:
    timeout = cell.variant.timeout_seconds if seconds_left is None else min(cell.variant.timeout_seconds, seconds_left)
    try:
        with deadlines.after(timeout):  # asyncio.timeout's cut, without a timer per cell
            response = await adapter.run(cell.case, workspace)
        # Every adapter's answer, checked by one set of rules before it is priced or stored.
        return checked_response(response), None, None
    except TimeoutError:
        return SystemResponse(), TraceError(type="timeout", message=f"no response within {timeout:g}s"), None
    except AdapterError as exc:
        return (exc.partial or SystemResponse(), TraceError(type=exc.type, message=str(exc), stack=exc.stack),
                exc.retry_after)
    except RaisedBySystem as exc:
        return SystemResponse(), _raised(exc.original), None
    except asyncio.CancelledError as exc:
        if _cancelled_from_outside():
            raise  # the run itself is being stopped (Ctrl-C): not the cell's doing
        return SystemResponse(), _raised(exc), None
    except Exception as exc:  # noqa: BLE001 - the system under test may raise anything
        return SystemResponse(), _raised(exc), None
    # Any other BaseException (KeyboardInterrupt, Dagster's interrupt) arrived unwrapped, so it
    # was not raised by the system (whose BaseExceptions its adapter wraps as RaisedBySystem,
    # on whatever thread or process its code ran): the run is stopping.


def _raised(exc: BaseException) -> TraceError:
    stack = "".join(traceback.format_exception(exc, limit=20))
    return TraceError(type="exception", message=f"{type(exc).__name__}: {exc}", stack=stack)


def _cancelled_from_outside() -> bool:
    """True when this task was asked to stop (the run is cancelled), rather than the system
    under test raising CancelledError itself."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
