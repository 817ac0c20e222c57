"""The Evaluator contract: a pure function of (case, trace, artifact) -> Verdict."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

from evalh_pipeline.common.configured import Configured
from evalh_pipeline.common.context import EvaluatorContext
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

# EvaluatorContext lives in common/ (judges and embedders are built with it too); named here for evaluators.
__all__ = ["Evaluator", "EvaluatorConfigModel", "EvaluatorConfigT", "EvaluatorContext", "SyncEvaluator", "Verdict"]


class EvaluatorConfigModel(BaseModel):
    """Base of evaluator config models, validated when the eval loads.

    An unknown key is dropped with a warning (an error with ``--strict``), as eval-harness
    ignores keys an evaluator does not read; ``description`` is free text for the reader.
    """

    model_config = ConfigDict(extra="forbid")

    #: The trace fields (dotted paths) the evaluator reads whatever its config says; a config
    #: with a ``field`` key reads that field too. ``trace.capture`` is checked against them at load.
    TRACE_FIELDS: ClassVar[tuple[str, ...]] = ()

    description: str | None = None

    def unused_keys(self) -> dict[str, str]:
        """Keys that are accepted but have no effect here: key -> why (warned about at load)."""
        return {}

    def config_warnings(self) -> dict[Any, str]:
        """Settings that load but likely do not do what the author meant: key (or a tuple path
        into the config) -> why (warned at load)."""
        return {}

    def trace_fields_read(self) -> tuple[str, ...]:
        """The trace fields this configured evaluator reads (``TRACE_FIELDS`` and its ``field``)."""
        field = getattr(self, "field", None)
        return (*self.TRACE_FIELDS, *([field] if isinstance(field, str) else []))


# Any pydantic model may configure an evaluator (the judges' configs extend JudgeSettings);
# EvaluatorConfigModel is the usual base, with ``description`` and the load-time hooks.
EvaluatorConfigT = TypeVar("EvaluatorConfigT", bound=BaseModel, default=EvaluatorConfigModel, covariant=True)


@dataclass
class Verdict:
    """An evaluator's judgement; the engine wraps it into an EvaluationResult with timings."""

    passed: bool
    reason: str
    score: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


class Evaluator(Configured[EvaluatorConfigT], ABC):
    """Judges one trace. Subclasses name their config model as the parameter
    (``class Mine(Evaluator[MineConfig])``) and implement :meth:`evaluate`.

    Evaluators hold no state between calls and read nothing but their arguments (no
    environment, no files outside the artifact), so re-evaluation is deterministic.
    """

    Config: ClassVar[type[BaseModel]]  # set from the generic parameter (common/configured.py)
    #: The Trace fields :meth:`evaluate` reads, for an evaluator that reads a few (None: any).
    #: Re-evaluation then validates only these fields of each trace (plus the cell's identity
    #: and ``error``) when every evaluator it runs declares its own: an evaluator changed in a
    #: large run is re-judged without decoding whole traces. Reading an undeclared field
    #: raises AttributeError there, so declare every field read, nested ones by their top.
    #: A class declares it, or an instance from its config (the field path it reads).
    trace_fields: frozenset[str] | None = None
    #: False when :meth:`evaluate` never reads the case: re-evaluation then skips looking it up
    #: and passes an empty one.
    reads_case: bool = True
    #: True when judging calls a model (a judge): the same trace may get another verdict on
    #: another call. ``evalh re-evaluate --repeat-judging`` measures these only.
    calls_model: bool = False
    #: The hash of this evaluator's name, type and config (runner/hashes.py): set by the runner
    #: that builds it, as results record it (``evaluator_hash``).
    config_hash: str

    def __init__(
        self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None
    ) -> None:
        self.name = name
        self.type_name = type_name
        self.config = self._validated_config(config)
        self.context = context or EvaluatorContext()

    @abstractmethod
    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        ...

    def bypass_cache(self) -> None:
        """Ask the model on every call from now on, never a cached answer (repeated judging:
        a cached answer would repeat the first verdict). Without a cache, nothing to do."""


class SyncEvaluator(Evaluator[EvaluatorConfigT]):
    """An evaluator that does no I/O: subclasses implement :meth:`evaluate_sync`.

    Re-evaluation calls ``evaluate_sync`` directly, without an event-loop round trip per
    verdict, and may judge traces of such evaluators in several worker processes, so
    instances must be picklable. ``evaluate`` keeps the async contract for everything else.
    """

    @abstractmethod
    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        ...

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        return self.evaluate_sync(case, trace, artifact)
