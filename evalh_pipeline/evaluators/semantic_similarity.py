"""``semantic_similarity``: cosine between the embeddings of a trace field and a reference."""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, field_validator, model_validator

from evalh_pipeline.common.ratelimits import RateLimits
from evalh_pipeline.embedders import EmbedderError, EmbedderUnavailable, build_embedder, check_embedder_spec
from evalh_pipeline.evaluators import eval_harness_keys
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, EvaluatorContext, Verdict
from evalh_pipeline.common.fields import FieldPath, as_text, check_field_path
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


_UNAVAILABLE = "_unavailable"  # marks an embedder spec whose package is missing (see unused_keys)


class SemanticSimilarityConfig(EvaluatorConfigModel):
    field: str = "output.final_answer"
    reference_text: str | None = None
    # A path into the case: expected.reference_answer, expected.facts.summary, input.question.
    reference_path: str | None = None
    # Required: a good threshold depends on the embedder (hashing is lexical, wordllama semantic).
    threshold: float = Field(ge=-1.0, le=1.0)
    embedder: str | dict[str, Any] = "hashing"

    @model_validator(mode="before")
    @classmethod
    def _eval_harness_keys(cls, data: Any) -> Any:
        return eval_harness_keys.semantic_similarity(data)

    @field_validator("field", "reference_path")
    @classmethod
    def _parsable(cls, value: str | None) -> str | None:
        return check_field_path(value)

    @field_validator("embedder")
    @classmethod
    def _known_embedder(cls, value: str | dict[str, Any]) -> dict[str, Any]:
        try:
            return check_embedder_spec(value)
        except EmbedderUnavailable as exc:
            # Loads anyway (a warning); every result is then an error saying the same.
            spec = {"name": value} if isinstance(value, str) else dict(value)
            return {**spec, _UNAVAILABLE: str(exc)}

    def unused_keys(self) -> dict[str, str]:
        if isinstance(self.embedder, dict) and _UNAVAILABLE in self.embedder:
            return {"embedder": f"{self.embedder[_UNAVAILABLE]}: the eval loads, and every result of this "
                                "evaluator is an error until it is installed"}
        return {}

    @model_validator(mode="after")
    def _one_reference(self) -> SemanticSimilarityConfig:
        if (self.reference_text is None) == (self.reference_path is None):
            raise ValueError("give exactly one of reference_text or reference_path")
        return self


class SemanticSimilarity(Evaluator[SemanticSimilarityConfig]):
    """Passes when cosine(embed(field), embed(reference)) >= ``threshold``; score = the cosine.

    A missing or empty field or reference fails with a reason saying which; an embedder
    that cannot embed (server down, bad answer) raises, so the result is an ``error``.
    """

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        self._field = FieldPath(self.config.field)
        self._reference = FieldPath(self.config.reference_path) if self.config.reference_path else None
        spec = self.config.embedder
        self._unavailable = spec.get(_UNAVAILABLE) if isinstance(spec, dict) else None
        # An embeddings server's limit is the run's (shared with systems and judges that meet it).
        limits = self.context.rate_limits or RateLimits(max_concurrency=self.context.max_concurrency)
        self.embedder = None if self._unavailable else build_embedder(spec, self.context.env, limits)

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        if self.embedder is None:
            raise EmbedderError(self._unavailable)  # the result is an error with the load warning's text
        cfg = self.config
        text = as_text(self._field.get(trace))
        if self._reference is not None:
            source = cfg.reference_path
            reference = as_text(self._reference.get(case))
        else:
            source, reference = "reference_text", cfg.reference_text or ""
        detail: dict[str, Any] = {"embedder": self.embedder.type_name, "model": self.embedder.model,
                                  "field": cfg.field, "reference": source, "threshold": cfg.threshold}
        if not text.strip():
            return Verdict(False, f"{cfg.field} is missing or empty: nothing to compare", score=0.0,
                           detail={**detail, "similarity": None})
        if not reference.strip():
            return Verdict(False, f"reference {source} is missing or empty in case {case.id!r}", score=0.0,
                           detail={**detail, "similarity": None})
        answer_vector, reference_vector = await self.embedder.embed([text, reference])
        similarity = round(cosine(answer_vector, reference_vector), 6)
        detail["similarity"] = similarity
        if similarity >= cfg.threshold:
            return Verdict(True, f"similarity {similarity:.3f} >= threshold {cfg.threshold}", score=similarity,
                           detail=detail)
        return Verdict(False, f"similarity {similarity:.3f} < threshold {cfg.threshold}", score=similarity,
                       detail=detail)


def cosine(a: list[float], b: list[float]) -> float:
    """The cosine of two embeddings (0 for a zero vector)."""
    if len(a) != len(b):
        raise ValueError(f"embeddings of different sizes ({len(a)} and {len(b)})")
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    # A zero vector (no features, no known token) is similar to nothing.
    return math.fsum(x * y for x, y in zip(a, b)) / norm if norm else 0.0
