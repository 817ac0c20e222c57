"""The SystemAdapter contract: how the runner calls a system under test."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeVar

from evalh_pipeline.common.configured import Configured
from evalh_pipeline.errors import CellError
from evalh_pipeline.common.containers import Sandbox
from evalh_pipeline.models import EvalCase, RunVariant, ToolCall, ToolResult, TraceMessage, TraceMetrics, TraceOutput


# Where a cell's system works (SystemAdapter.preflight): a workspace folder on this machine,
# a sandboxed workspace's container, or no workspace (None).
WorkspaceKind = Literal["host", "sandbox"] | None


class SystemResponse(BaseModel):
    """What an adapter reports for one cell; the runner turns it into a Trace."""

    output: TraceOutput = Field(default_factory=TraceOutput)
    messages: list[TraceMessage] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    metrics: TraceMetrics = Field(default_factory=TraceMetrics)
    extra: dict[str, Any] = Field(default_factory=dict)
    # A system that reports recorded timing (``replay``) sets these; the runner's own clock
    # is used otherwise.
    started_at: datetime | None = None
    finished_at: datetime | None = None
    latency_ms: int | None = None


class AdapterError(CellError):
    """A typed failure of the system under test (``adapter_error``, ``http_5xx``, ``rate_limited``, ...).

    ``partial`` carries whatever the adapter captured before failing; it lands in the trace.
    ``retry_after``: with ``rate_limited``, the seconds the server asked to wait (None: not said).
    """

    def __init__(self, message: str, *, type: str = "adapter_error", partial: SystemResponse | None = None,
                 stack: str | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.type = type
        self.partial = partial
        self.stack = stack  # a traceback from another process (python_function workers)
        self.retry_after = retry_after


class RaisedBySystem(CellError):
    """Carries a BaseException (SystemExit, KeyboardInterrupt, GeneratorExit, ...) the system
    under test raised, across thread and task boundaries that would otherwise act on it
    (stop the event loop, end the process): it is the cell's error, nothing more."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(f"{type(original).__name__}: {original}")
        self.original = original


@dataclass(frozen=True)
class SystemContext:
    """Facts about the eval an adapter may need at start-up."""

    eval_dir: Path
    max_concurrency: int = 4
    # Values expanded from secret-looking ${VARS}: adapters mask them in anything they record.
    secret_values: frozenset[str] = frozenset()
    # The host environment the eval was loaded with (Settings.env; the runner hands it in).
    # None, for an adapter built directly (tests, scripts): this process's environment.
    env: Mapping[str, str] | None = field(default=None, repr=False, compare=False)
    # What each variant that runs code from outside the eval is to run, as the run recorded it
    # (run.json ``fixtures.systems``: ``git:<commit>``, ``image:<id>``). Empty: resolve it now.
    versions: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def host_env(self) -> Mapping[str, str]:
        """``env``, or this process's environment when none was handed in."""
        return os.environ if self.env is None else self.env


@dataclass
class Workspace:
    """The live workspace of one cell, handed to the adapter (never to evaluators)."""

    path: Path
    metadata: dict[str, Any] = field(default_factory=dict)
    # docker_volume workspaces: the cell's sandbox container; commands run in it, not on the host.
    sandbox: Sandbox | None = None


class SystemConfigModel(BaseModel):
    """Base of adapter config models: unknown keys are errors unless an adapter allows them."""

    model_config = ConfigDict(extra="forbid")

    timeout_seconds: float = 120

    def unused_keys(self) -> dict[str, str]:
        """Keys that are accepted but have no effect here: key -> why (warned about at load)."""
        return {}


SystemConfigT = TypeVar("SystemConfigT", bound=SystemConfigModel, default=SystemConfigModel, covariant=True)


class SystemAdapter(Configured[SystemConfigT], ABC):
    """One configured way to call the system under test; one instance per variant.

    Subclasses name their config model as the parameter (``class Mine(SystemAdapter[MineConfig])``,
    validated when the eval loads) and implement :meth:`run`.
    :meth:`start` and :meth:`close` bracket a run (open and close clients, pools).
    """

    Config: ClassVar[type[SystemConfigModel]]  # set from the generic parameter (common/configured.py)

    @property
    def stops_on_timeout(self) -> bool:
        """True when a call that timed out has certainly stopped (its process killed) by the
        time the runner sees the timeout; False when it may still run and touch its workspace."""
        return True

    def __init__(self, variant: RunVariant, context: SystemContext) -> None:
        self.variant = variant
        self.context = context
        self.config = self._validated_config(variant.config)

    @classmethod
    def works_outside_sandbox(cls, config: dict[str, Any]) -> bool:
        """True when this system, so configured, works on the cell's workspace from outside a
        sandboxed workspace's container (a service given the host path): it would find an
        empty host folder, and what it wrote there would vanish, so the loader refuses the
        pair. Systems that run in the container (``cli``) or are handed it
        (``python_function``), or never touch the workspace (``replay``), say False."""
        return False

    def preflight(self, workspace: WorkspaceKind = None) -> list[tuple[str, str]]:
        """(key of the system's config, problem) for each thing a run would meet wrong that
        can be found without calling the system or starting it (``evalh run --dry-run``).

        ``workspace``: ``"host"`` when the eval's cells run in a workspace folder on this
        machine, ``"sandbox"`` when in a sandboxed workspace's container, None without one."""
        return []

    async def start(self) -> None:
        """Acquire resources shared by all cells of this variant."""

    def rate_limit_scope(self) -> tuple[str, str | None] | None:
        """(endpoint URL, credential) of the rate limit this system's calls meet, for the
        runner's limiter (common/ratelimits/); None: none known (only a named pool applies)."""
        return None

    @abstractmethod
    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
        """Call the system once for ``case``. Raise to fail the cell; the runner records it."""
        ...

    async def close(self) -> None:
        """Release what :meth:`start` acquired."""
