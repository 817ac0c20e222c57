"""``exact_match``: a trace field equals a literal or a ground-truth fact of the case."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator, model_validator

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, EvaluatorContext, SyncEvaluator, Verdict
from evalh_pipeline.common.fields import FieldPath, check_field_path
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

class ExactMatchConfig(EvaluatorConfigModel):
    field: str = "output.final_answer"
    expected: Any = None
    expected_from: str | None = None  # a path into case.expected.facts
    case_sensitive: bool = True
    strip: bool = False

    @field_validator("field", "expected_from")
    @classmethod
    def _parsable(cls, value: str | None) -> str | None:
        return check_field_path(value)

    @model_validator(mode="after")
    def _one_source(self) -> "ExactMatchConfig":
        if "expected" not in self.model_fields_set and self.expected_from is None:
            raise ValueError("set either 'expected' (a literal) or 'expected_from' (a path into expected.facts)")
        return self


class ExactMatch(SyncEvaluator[ExactMatchConfig]):
    """Compares with ``==``; strings can be compared case-insensitively and stripped."""

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        self._field = FieldPath(self.config.field)
        # A literal `expected` wins over `expected_from`, as in eval-harness.
        literal = "expected" in self.config.model_fields_set
        self._source = None if literal else FieldPath(self.config.expected_from or "")
        self.trace_fields = self._field.model_fields_read(Trace)  # per instance: the field it reads
        self.reads_case = self._source is not None

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        if not self._field.exists(trace):
            return Verdict(False, f"field {cfg.field!r} not present in the trace", score=0.0)
        actual = self._field.get(trace)
        if self._source is not None:
            if not self._source.exists(case.expected.facts):
                return Verdict(False, f"no expected value at expected.facts.{cfg.expected_from}", score=0.0)
            expected = self._source.get(case.expected.facts)
        else:
            expected = cfg.expected
        ok = _normalise(actual, cfg) == _normalise(expected, cfg)
        detail = {"field": cfg.field, "actual": actual, "expected": expected}
        if ok:
            return Verdict(True, f"{cfg.field} equals the expected value", score=1.0, detail=detail)
        return Verdict(False, f"{cfg.field} is {actual!r}, expected {expected!r}", score=0.0, detail=detail)


def _normalise(value: Any, cfg: ExactMatchConfig) -> Any:
    if isinstance(value, str):
        value = value.strip() if cfg.strip else value
        return value if cfg.case_sensitive else value.casefold()
    return value
