"""``evaluator_set``: several evaluators judged as one, on a weighted score or on all passing.

Each member is an evaluator of any type (an ``evaluator_set`` too) with a ``weight``
(default 1). The set's score is the weighted mean of its members' scores,
sum(score × weight) / sum(weight) (0 when the weights sum to 0); a member that gives no
score counts 1 when it passed, else 0, and one that raises counts 0 and fails. The set
passes:

- with a ``threshold``: when its score reaches it (``score >= threshold``), whatever single
  members said;
- without one: when every member of weight above 0 passed (a member of weight 0 is
  recorded but never fails the set).

This is promptfoo's rule for a test's and an ``assert-set``'s assertions (AssertionsResult in
promptfoo's src/assertions/assertionsResult.ts: ``addResult`` sums score × weight, ``testResult``
compares the mean with the threshold; runAssertionInternal in src/assertions/index.ts passes
a weight-0 assertion), so the promptfoo importer maps thresholds onto it. It is ours as much as
theirs: a case may pass on "most of these checks" without any importer.

With a ``transform`` (evaluators/output_transform.py: JavaScript run by Node, or a Python
file's function), the members judge the answer as that code rewrites it; a transform that
fails errors the set's result (no member judges).

The set is one evaluator to the runner (one result, one config hash: changing a weight or a
member re-judges this set only); each member's own verdict is kept in the result's
``detail.members`` (name, type, weight, passed, score, reason, detail).
"""

from __future__ import annotations

import traceback
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalh_pipeline.common.fields import as_text
from evalh_pipeline.config.schema import NAME_PATTERN
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, EvaluatorContext, SyncEvaluator, Verdict
from evalh_pipeline.evaluators.output_transform import OutputTransform, transform_output
from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

class EvaluatorSetMember(BaseModel):
    """One member of a set: an eval.yaml ``evaluators`` entry with a ``weight``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    type: str
    config: dict[str, Any] = Field(default_factory=dict)
    weight: float = Field(default=1.0, ge=0)

    @model_validator(mode="after")
    def _known_type_and_config(self) -> EvaluatorSetMember:
        """The member's config checked by its own type's model, as a top-level evaluator's is."""
        try:
            cls = EVALUATORS.get(self.type)
        except LookupError as exc:  # reported where the member is (file:line), naming the known types
            raise ValueError(f"member {self.name!r}: {exc}") from None
        try:
            cls.Config.model_validate(self.config)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"member {self.name!r} ({self.type}): config{'.' + where if where else ''}: "
                             f"{first['msg']}") from None
        return self


class EvaluatorSetConfig(EvaluatorConfigModel):
    """An ``evaluator_set``: its members and the score its verdict needs (None: every member passes)."""

    evaluators: list[EvaluatorSetMember] = Field(min_length=1)
    threshold: float | None = None
    #: The members judge the answer as this code rewrites it (evaluators/output_transform.py).
    transform: OutputTransform | None = None

    @model_validator(mode="after")
    def _unique_names(self) -> EvaluatorSetConfig:
        names = [member.name for member in self.evaluators]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"member names must be unique within the set: {', '.join(repeated)}")
        return self

    def trace_fields_read(self) -> tuple[str, ...]:
        """Every member's trace fields (checked against ``trace.capture`` at load)."""
        fields: list[str] = []
        for member in self.evaluators:
            config = EVALUATORS.get(member.type).Config.model_validate(member.config)
            read = config.trace_fields_read() if isinstance(config, EvaluatorConfigModel) else ()
            fields += [f for f in read if f not in fields]
        if self.transform is not None and "output.final_answer" not in fields:
            fields.append("output.final_answer")
        return tuple(fields)


class EvaluatorSet(Evaluator[EvaluatorSetConfig]):
    """Judges a trace with each member and scores them together (see the module doc)."""

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        self.members = [(member, EVALUATORS.get(member.type)(member.name, member.type, member.config, self.context))
                        for member in self.config.evaluators]
        built = [evaluator for _, evaluator in self.members]
        declared = [evaluator.trace_fields for evaluator in built]
        self.trace_fields = None if any(f is None for f in declared) else frozenset().union(*declared)  # type: ignore[arg-type]
        if self.trace_fields is not None and self.config.transform is not None:
            self.trace_fields |= {"output"}
        self.reads_case = any(evaluator.reads_case for evaluator in built) or self.config.transform is not None
        self.calls_model = any(evaluator.calls_model for evaluator in built)

    def bypass_cache(self) -> None:
        """Every member asks its model again (repeated judging)."""
        for _, evaluator in self.members:
            evaluator.bypass_cache()

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        transformed = None
        if self.config.transform is not None:
            variables = case.input.get("vars")
            transformed = await transform_output(self.config.transform, as_text(trace.output.final_answer),
                                                 variables if isinstance(variables, dict) else {})
            trace = trace.model_copy(update={"output": trace.output.model_copy(update={"final_answer": transformed})})
        verdicts = []
        for member, evaluator in self.members:
            try:
                if isinstance(evaluator, SyncEvaluator):
                    verdict = evaluator.evaluate_sync(case, trace, artifact)
                else:
                    verdict = await evaluator.evaluate(case, trace, artifact)
            except Exception as exc:  # noqa: BLE001 - a member that raises fails itself, not the set's judging
                verdict = Verdict(False, f"evaluator {member.name!r} raised {type(exc).__name__}: {exc}", score=0.0,
                                  detail={"error": traceback.format_exception_only(exc)[-1].strip()})
            verdicts.append(verdict)
        verdict = combine(self.config, verdicts)
        if transformed is not None:
            verdict.detail["transformed_output"] = transformed
        return verdict


def member_score(verdict: Verdict) -> float:
    """A member's score in the weighted mean: its own, else 1 when it passed and 0 when not."""
    if verdict.score is not None:
        return float(verdict.score)
    return 1.0 if verdict.passed else 0.0


def combine(config: EvaluatorSetConfig, verdicts: list[Verdict]) -> Verdict:
    """The set's verdict from its members' (in the order of ``config.evaluators``)."""
    total = sum(member.weight for member in config.evaluators)
    weighted = sum(member_score(v) * member.weight for member, v in zip(config.evaluators, verdicts))
    score = weighted / total if total > 0 else 0.0
    failed = [(member, v) for member, v in zip(config.evaluators, verdicts) if not v.passed and member.weight > 0]
    if config.threshold is not None:
        passed = score >= config.threshold
        reason = f"weighted score {score:.2f} {'>=' if passed else '<'} threshold {config.threshold:g}"
        if failed:
            reason += f" ({len(failed)} of {len(verdicts)} failed: {', '.join(m.name for m, _ in failed)})"
    else:
        passed = not failed
        reason = ("all passed" if passed
                  else "; ".join(f"{member.name}: {verdict.reason}" for member, verdict in failed))
    members = [{"name": member.name, "type": member.type, "weight": member.weight, "passed": verdict.passed,
                "score": verdict.score, "reason": verdict.reason, "detail": verdict.detail}
               for member, verdict in zip(config.evaluators, verdicts)]
    return Verdict(passed, reason, score=score, detail={"threshold": config.threshold, "members": members})
