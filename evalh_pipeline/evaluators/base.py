"""The Evaluator contract: a pure function of (case, trace, artifact) -> Verdict."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class EvaluatorConfigModel(BaseModel):
    """Base of evaluator config models: unknown keys are errors, caught when the eval loads."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class Verdict:
    """An evaluator's judgement; the engine wraps it into an EvaluationResult with timings."""

    passed: bool
    reason: str
    score: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EvaluatorContext:
    """What an evaluator that calls out (a judge, an embedder) may need when it is built.

    Deterministic evaluators ignore it. ``env`` is read at construction only (credentials,
    base URLs), never inside :meth:`Evaluator.evaluate`, so verdicts stay reproducible.
    """

    eval_dir: Path = field(default_factory=Path.cwd)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    # Values of secret-looking ${VARS}: never written into a verdict's detail.
    secret_values: frozenset[str] = frozenset()
    # Where evaluators may keep caches across runs (e.g. judge verdicts); None disables them.
    cache_dir: Path | None = None
    max_concurrency: int = 4


class Evaluator(ABC):
    """Judges one trace. Subclasses set ``Config`` and implement :meth:`evaluate`.

    Evaluators hold no state between calls and read nothing but their arguments (no
    environment, no files outside the artifact), so re-evaluation is deterministic.
    """

    Config: ClassVar[type[EvaluatorConfigModel]] = EvaluatorConfigModel

    def __init__(
        self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None
    ) -> None:
        self.name = name
        self.type_name = type_name
        self.config = self.Config.model_validate(config)
        self.context = context or EvaluatorContext()

    @abstractmethod
    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        ...


class SyncEvaluator(Evaluator):
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
