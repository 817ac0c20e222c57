"""Bring every ``output[]`` of a run level with it after each stage; a failure is journalled, never fatal
(but the canonical URL's: the stage fails).

Order: the trace stores, then the sinks (after the summary stage, with the run's view read
once), then the folder mirrors and the canonical URL (:mod:`.publishing`), so a failure
journalled in ``publish.jsonl`` (:mod:`.journal`) reaches the file copies in the same
publish. The run directory is the canonical copy and each store is a mirror of it: every
sync makes the store match the run directory as a whole, so the next stage's sync (or a
``--resume``) repairs a store that missed one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from evalh_pipeline.outputs.journal import OutputFailure, record_failure
from evalh_pipeline.outputs.publishing import PublishReport, RunPublisher
from evalh_pipeline.outputs.registry import STORES
from evalh_pipeline.outputs.sinks import VIEW_STAGE, RunSink
from evalh_pipeline.outputs.stores.base import ReadableStore, StoreContext, TraceStore
from evalh_pipeline.outputs.view import RunView, read_view
from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.run_dir import RunDirectory

if TYPE_CHECKING:
    from evalh_pipeline.config.spec import EvalSpec
    from evalh_pipeline.models import Trace

log = logging.getLogger("evalh_pipeline.store")


def build_stores(spec: EvalSpec) -> list[TraceStore]:
    """The stores and sinks of ``spec.stores`` (``output[]`` entries other than run folders), unopened."""
    context = StoreContext(eval_dir=spec.eval_dir, secret_values=spec.secret_values)
    return [STORES.get(config["type"])(config, context) for config in spec.stores]


@contextmanager
def open_stores(spec: EvalSpec) -> Iterator[list[TraceStore]]:
    stores = build_stores(spec)
    try:
        yield stores
    finally:
        for store in stores:
            _close(store)


def annotate_trace(stores: Sequence[TraceStore], trace: Trace) -> None:
    """What the stores put on a trace before it is persisted (the OTel span id)."""
    for store in stores:
        try:
            store.annotate(trace)
        except Exception as exc:  # noqa: BLE001 - a store never fails a cell
            trace.extra.setdefault("store_errors", []).append({"store": store.label, "error": _text(exc, store)})


def publish_run(spec: EvalSpec, run_dir: RunDirectory, stage: str) -> PublishReport:
    """Bring every output of ``spec`` level with ``run_dir`` after ``stage`` (a no-op for a
    local-only eval): the stores and sinks first, then the folder mirrors and the canonical URL.

    A canonical failure raises :class:`~evalh_pipeline.outputs.publishing.PublishError`; the
    others are journalled and returned in the report's ``failures``.
    """
    store_failures = sync_stores(spec, run_dir, stage)
    report = RunPublisher.for_spec(spec).publish(run_dir, stage)
    report.failures[:0] = store_failures
    return report


def sync_stores(spec: EvalSpec, run_dir: RunDirectory, stage: str) -> list[OutputFailure]:
    """Bring every store and sink of ``spec`` level with ``run_dir`` after ``stage``; returns the failures."""
    if not spec.stores:
        return []
    failures = []
    view: RunView | None = None
    # One sync per run at a time on this machine: a late sync of an older state would undo a newer one.
    with locked(run_dir.stores_lock), open_stores(spec) as stores:
        for store in stores:
            if not store.mirrors or (isinstance(store, RunSink) and stage != VIEW_STAGE):
                continue
            try:
                if isinstance(store, RunSink):
                    if view is None:
                        view = read_view(run_dir)
                    store.receive(view)
                else:
                    store.write_run(run_dir, stage)
            except Exception as exc:  # noqa: BLE001 - an output never fails the run
                failure = OutputFailure(store.label, _text(exc, store))
                failures.append(failure)
                record_failure(run_dir, stage, failure)
                log.warning("%s: store %s not updated after %s: %s", run_dir.run_id, failure.target, stage,
                            failure.error)
    return failures


def failure_titles(spec: EvalSpec) -> dict[str, str]:
    """Label -> how ``evalh`` names a journalled failure, for the sinks of ``spec`` (the
    others are mirrors: "mirror <label> not updated")."""
    return {store.label: store.failure_title for store in build_stores(spec) if isinstance(store, RunSink)}


def record_baseline(spec: EvalSpec, run_id: str, promoted_at: str) -> list[OutputFailure]:
    """Tell every readable store of ``spec`` that ``run_id`` is now the eval's baseline (never raises)."""
    failures = []
    with open_stores(spec) as stores:
        for store in stores:
            if not isinstance(store, ReadableStore):
                continue
            try:
                store.record_baseline(spec.name, run_id, promoted_at)
            except Exception as exc:  # noqa: BLE001 - a mirror store never fails a promotion
                failures.append(OutputFailure(store.label, _text(exc, store)))
                log.warning("store %s did not record baseline %s: %s", store.label, run_id, failures[-1].error)
    return failures


def _text(exc: BaseException, store: TraceStore) -> str:
    text = f"{type(exc).__name__}: {exc}"
    for secret in store.context.secret_values:
        if secret:
            text = text.replace(secret, "***")
    return text


def _close(store: TraceStore) -> None:
    try:
        store.close()
    except Exception:  # noqa: BLE001, S110 - closing a broken connection must not hide the real error
        pass
