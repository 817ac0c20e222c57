"""The Evaluator contract: a pure function of (case, trace, artifact) -> Verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
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


class Evaluator:
    """Judges one trace. Subclasses set ``Config`` and implement :meth:`evaluate`.

    Evaluators hold no state between calls and read nothing but their arguments (no
    environment, no files outside the artifact), so re-evaluation is deterministic.
    """

    Config: ClassVar[type[EvaluatorConfigModel]] = EvaluatorConfigModel

    def __init__(self, name: str, type_name: str, config: dict[str, Any]) -> None:
        self.name = name
        self.type_name = type_name
        self.config = self.Config.model_validate(config)

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        raise NotImplementedError
