"""``contains_text``: required, alternative and forbidden substrings in a trace field."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, EvaluatorContext, SyncEvaluator, Verdict
from evalh_pipeline.common.fields import FieldPath, as_text, check_field_path
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class ContainsTextConfig(EvaluatorConfigModel):
    # None means "not given": all_of / none_of then fall back to the case's expectations.
    all_of: list[str] | None = None
    any_of: list[str] = Field(default_factory=list)
    none_of: list[str] | None = None
    case_sensitive: bool = False
    field: str = "output.final_answer"

    @field_validator("field")
    @classmethod
    def _parsable(cls, value: str) -> str:
        return check_field_path(value)

    def config_warnings(self) -> dict[str, str]:
        # The case's lists are about the answer. eval-harness 2.0.2 applies them to any field
        # (tests/compat/evals/expected_text: `thinking field` fails on `empty_answer`), and evalh
        # keeps its verdicts; on another field that is rarely what was meant, so it is said.
        if self.field.removeprefix("$.") == "output.final_answer":
            return {}
        unset = [(key, case_key) for key, case_key in
                 (("all_of", "answer_should_include"), ("none_of", "answer_should_not_include"))
                 if getattr(self, key) is None]
        if not unset:
            return {}
        lists = " and ".join(f"expected.{case_key}" for _, case_key in unset)
        keys = " and ".join(key for key, _ in unset)
        return {"field": (f"the case's {lists} {'is' if len(unset) == 1 else 'are'} checked in {self.field}, "
                          f"since {keys} {'is' if len(unset) == 1 else 'are'} not set (set {keys}, [] for none)")}


class ContainsText(SyncEvaluator[ContainsTextConfig]):
    """Passes when every ``all_of``, at least one ``any_of`` and no ``none_of`` string occurs.

    Without ``all_of`` the case's ``expected.answer_should_include`` is used, and without
    ``none_of`` its ``answer_should_not_include``; an explicit empty list turns that off.
    """

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        self._path = FieldPath(self.config.field)
        self.trace_fields = self._path.model_fields_read(Trace)  # per instance: the field it reads
        # The config is fixed: its needles are case-folded and its passing reason built once,
        # not per verdict (re-evaluation gives millions of them).
        self._fold = str if self.config.case_sensitive else str.lower
        self._any_of = [self._fold(s) for s in self.config.any_of]
        self._passed = f"{self.config.field} contains the expected text"

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        all_of = cfg.all_of if cfg.all_of is not None else case.expected.answer_should_include
        none_of = cfg.none_of if cfg.none_of is not None else case.expected.answer_should_not_include
        fold = self._fold
        haystack = fold(as_text(self._path.get(trace)))
        # Comprehensions only over non-empty lists: each one is a call of its own.
        missing = [s for s in all_of if fold(s) not in haystack] if all_of else []
        any_hits = [s for s, n in zip(cfg.any_of, self._any_of) if n in haystack] if cfg.any_of else []
        forbidden = [s for s in none_of if fold(s) in haystack] if none_of else []
        detail = {
            "field": cfg.field,
            "all_of": all_of,
            "missing": missing,
            "any_of_matched": any_hits,
            "forbidden_present": forbidden,
        }
        if missing or forbidden or (cfg.any_of and not any_hits):
            problems = []
            if missing:
                problems.append(f"missing required: {missing}")
            if cfg.any_of and not any_hits:
                problems.append(f"none of any_of matched: {cfg.any_of}")
            if forbidden:
                problems.append(f"forbidden present: {forbidden}")
            return Verdict(False, "; ".join(problems), score=0.0, detail=detail)
        return Verdict(True, self._passed, score=1.0, detail=detail)
