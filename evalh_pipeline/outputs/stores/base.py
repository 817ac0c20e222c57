"""What a trace store is: a configured ``output[]`` entry that takes a run's records.

A store is given the whole run directory after each stage and makes its copy match it
(:meth:`TraceStore.write_run`): records it already holds are left alone (write-once; no
row is ever duplicated), new ones are added, and the few records the run directory
replaces on purpose (results on re-evaluation, traces on ``retry-failed``) are replaced.
A store that can be read back (:class:`ReadableStore`) lists runs by namespace and
writes one back as a run directory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator
from typing_extensions import TypeVar

from evalh_pipeline.common.configured import Configured

from evalh_pipeline.errors import InfrastructureError

if TYPE_CHECKING:
    from evalh_pipeline.models import Trace
    from evalh_pipeline.store.run_dir import RunDirectory


class StoreError(InfrastructureError, RuntimeError):
    """A store could not take or give back a run (the message never holds a password)."""


class StoreConfig(BaseModel):
    """Keys every store accepts: its type and the run namespace it files runs under."""

    model_config = ConfigDict(extra="forbid")

    type: str
    run_namespace: dict[str, str] = Field(default_factory=dict)

    @field_validator("run_namespace", mode="before")
    @classmethod
    def _text_values(cls, value: Any) -> Any:
        # YAML reads `branch: 2026` as a number: a namespace value is always text.
        if isinstance(value, dict):
            return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
        return value

    def secrets(self) -> frozenset[str]:
        """Values of this entry that are credentials by use (masked wherever shown; default: none)."""
        return frozenset()


StoreConfigT = TypeVar("StoreConfigT", bound=StoreConfig, default=StoreConfig, covariant=True)


@dataclass(frozen=True)
class StoreContext:
    """Where relative paths in a store's config resolve, and the values never to print."""

    eval_dir: Path
    secret_values: frozenset[str] = frozenset()


@dataclass(frozen=True)
class StoredRun:
    """One run as a store lists it."""

    run_id: str
    eval_name: str | None
    namespace: dict[str, str] | None
    created_at: str | None = None
    traces: int = 0
    results: int = 0


class TraceStore(Configured[StoreConfigT]):
    """Base of every ``output[]`` type other than the run directory itself.

    Subclasses name their config model as the parameter (``class Mine(TraceStore[MineConfig])``;
    validated at load, errors reported with file:line:key) and
    implement :meth:`write_run`. ``label`` names the store in warnings and in
    ``publish.jsonl`` without credentials.
    """

    Config: ClassVar[type[StoreConfig]]  # set from the generic parameter (common/configured.py)
    # False for a run folder, which the engine works in or copies files to (local_files):
    # the loader makes it an output folder (outputs/publishing.py), not a store.
    mirrors: ClassVar[bool] = True

    def __init__(self, config: Mapping[str, Any], context: StoreContext) -> None:
        self.config = self._validated_config(dict(config))
        self.context = context

    @property
    def namespace(self) -> dict[str, str]:
        return dict(self.config.run_namespace)

    @property
    def label(self) -> str:
        return self.config.type

    def annotate(self, trace: Trace) -> None:
        """Add what this store needs on a trace before it is persisted (default: nothing)."""

    def write_run(self, run_dir: RunDirectory, stage: str) -> None:
        """Make this store's copy of ``run_dir`` match it; raises on failure (never half a stage)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections (default: nothing)."""


class ReadableStore(TraceStore[StoreConfigT]):
    """A store the read-only commands can read runs back from."""

    def list_runs(self, namespace: Mapping[str, str] | None = None, eval_name: str | None = None) -> list[StoredRun]:
        """Runs whose namespace holds every key=value of ``namespace`` (all runs without one)."""
        raise NotImplementedError

    def export_run(self, run_id: str, dest: Path, namespace: Mapping[str, str] | None = None) -> None:
        """Write run ``run_id`` into the empty folder ``dest`` as a run directory.

        Raises :class:`LookupError` when the store has no such run in ``namespace``.
        """
        raise NotImplementedError

    def record_baseline(self, eval_name: str, run_id: str, promoted_at: str) -> None:
        """Remember that ``run_id`` is the promoted baseline of ``eval_name`` in this namespace."""
        raise NotImplementedError

    def current_baseline(self, eval_name: str, namespace: Mapping[str, str] | None = None) -> str | None:
        """The run id last promoted for ``eval_name`` in ``namespace`` (None: never promoted)."""
        raise NotImplementedError


def parse_namespace(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``["project=a", "branch=main"]`` -> ``{"project": "a", "branch": "main"}``."""
    namespace: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--namespace {pair!r}: use KEY=VALUE, e.g. --namespace project=agent_v3")
        namespace[key.strip()] = value
    return namespace


def namespace_json(namespace: Mapping[str, str] | None) -> str | None:
    """The namespace column's text: canonical JSON, NULL for no namespace (a v0.1 row)."""
    return json.dumps(dict(namespace), sort_keys=True, separators=(",", ":")) if namespace else None
