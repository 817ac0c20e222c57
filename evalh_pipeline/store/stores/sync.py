"""Copy a run to every store of its eval after each stage; a store that fails is recorded, never fatal.

The run directory is the canonical copy and each store is a mirror of it: a failure is
appended to the run's ``publish.jsonl`` (the same record the file mirrors of
:mod:`evalh_pipeline.store.publishing` leave, so ``evalh`` warns about it after the
command) and logged; the stage goes on. Every sync makes the store match the run
directory as a whole, so the next stage's sync (or a ``--resume``) repairs a store that
missed one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.store.stores.base import StoreContext, TraceStore

if TYPE_CHECKING:
    from evalh_pipeline.config.spec import EvalSpec
    from evalh_pipeline.models import Trace

log = logging.getLogger("evalh_pipeline.store")


@dataclass(frozen=True)
class StoreFailure:
    """A store that did not take a stage's records."""

    target: str
    error: str


def build_stores(spec: EvalSpec) -> list[TraceStore]:
    """The stores of ``spec.stores`` (``output[]`` entries other than local folders), unopened."""
    from evalh_pipeline.store.stores.registry import STORES

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


def sync_stores(spec: EvalSpec, run_dir: RunDirectory, stage: str) -> list[StoreFailure]:
    """Bring every store of ``spec`` level with ``run_dir`` after ``stage``; returns the failures."""
    if not spec.stores:
        return []
    from evalh_pipeline.store.publishing import MirrorFailure, record_failure

    failures = []
    # One sync per run at a time on this machine: a late sync of an older state would undo a newer one.
    with locked(run_dir.stores_lock), open_stores(spec) as stores:
        for store in stores:
            if not store.mirrors:
                continue
            try:
                store.write_run(run_dir, stage)
            except Exception as exc:  # noqa: BLE001 - a mirror store never fails the run
                failure = StoreFailure(store.label, _text(exc, store))
                failures.append(failure)
                record_failure(run_dir, stage, MirrorFailure(failure.target, failure.error))
                log.warning("%s: store %s not updated after %s: %s", run_dir.run_id, failure.target, stage,
                            failure.error)
    return failures


def record_baseline(spec: EvalSpec, run_id: str, promoted_at: str) -> list[StoreFailure]:
    """Tell every readable store of ``spec`` that ``run_id`` is now the eval's baseline (never raises)."""
    from evalh_pipeline.store.stores.base import ReadableStore

    failures = []
    with open_stores(spec) as stores:
        for store in stores:
            if not isinstance(store, ReadableStore):
                continue
            try:
                store.record_baseline(spec.name, run_id, promoted_at)
            except Exception as exc:  # noqa: BLE001 - a mirror store never fails a promotion
                failures.append(StoreFailure(store.label, _text(exc, store)))
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
