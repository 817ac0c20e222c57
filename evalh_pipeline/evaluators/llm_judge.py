"""``llm_judge``: a model judges the trace against natural-language assertions and/or a rubric."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalh_pipeline.evaluators import eval_harness_keys
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorContext, Verdict
from evalh_pipeline.common.fields import check_field_path
from evalh_pipeline.judges.judge import Judge, JudgeOutcome
from evalh_pipeline.judges.keyword_rule import is_keyword_judge, quoted_phrases, unchecked_warning
from evalh_pipeline.judges.prompt import Assertion, RubricSpec, build_prompt
from evalh_pipeline.judges.settings import JudgeSettings
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

_PASS_WHEN = re.compile(r"^(all|any|majority|k_of_n=(\d+))$")
_RANGE = re.compile(r"^\s*(-?\d+)\s*-\s*(-?\d+)\s*$")
# A named section, or (eval-harness) any JSONPath into the trace, `case.` for the case.
IncludeItem = str
_SECTION_NAMES = ("input", "final_answer", "thinking", "structured", "tool_calls", "expected")


class AssertionItem(BaseModel):
    """One assertion; ``required: false`` ones are judged and reported but do not decide the pass."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)
    required: bool = True


class RubricConfig(BaseModel):
    """``scale``: ``"1-5"`` (integers) or a list of scores or labels, worst to best."""

    model_config = ConfigDict(extra="forbid")

    criteria: str = Field(min_length=1)
    scale: str | list[int | float | str] = "1-5"
    pass_threshold: int | float | str
    levels: dict[str, str] = Field(default_factory=dict)  # score -> what it means

    @field_validator("scale")
    @classmethod
    def _scale(cls, value: str | list[Any]) -> str | list[Any]:
        if isinstance(value, str):
            match = _RANGE.match(value)
            if not match or int(match.group(1)) >= int(match.group(2)):
                raise ValueError(f"scale {value!r} must be a range like '1-5' or a list of scores, worst to best")
        elif len(value) < 2 or len({str(v) for v in value}) != len(value):
            raise ValueError("a scale list needs at least two distinct scores, worst to best")
        return value

    @property
    def values(self) -> tuple[int | float | str, ...]:
        if isinstance(self.scale, str):
            low, high = (int(x) for x in _RANGE.match(self.scale).groups())  # type: ignore[union-attr]
            return tuple(range(low, high + 1))
        return tuple(self.scale)

    @model_validator(mode="after")
    def _threshold_on_scale(self) -> "RubricConfig":
        values = self.values
        numbers = [v for v in values if not isinstance(v, str)]
        numeric = len(numbers) == len(values)
        if numeric and not (isinstance(self.pass_threshold, (int, float)) and min(numbers) <= self.pass_threshold <= max(numbers)):
            raise ValueError(f"pass_threshold {self.pass_threshold!r} must be a number within the scale "
                             f"{min(numbers)}..{max(numbers)}")
        if not numeric and self.pass_threshold not in values:
            raise ValueError(f"pass_threshold {self.pass_threshold!r} must be one of the scale {list(values)}")
        return self

    def passes(self, score: Any) -> bool:
        values = self.values
        if all(isinstance(v, (int, float)) for v in values):
            return bool(score >= self.pass_threshold)
        return values.index(score) >= values.index(self.pass_threshold)

    def numeric(self, score: Any) -> float:
        """The score as a number: itself, or a label's rank (1 = worst)."""
        return float(score) if isinstance(score, (int, float)) else float(self.values.index(score) + 1)

    def spec(self) -> RubricSpec:
        return RubricSpec(self.criteria, self.values, tuple(self.levels.items()))


def check_pass_when(value: str) -> str:
    """``all | any | majority | k_of_n=K`` (K >= 1)."""
    match = _PASS_WHEN.match(value)
    if not match or (match.group(2) is not None and int(match.group(2)) < 1):
        raise ValueError(f"pass_when {value!r} must be all, any, majority or k_of_n=K with K >= 1")
    return value


def check_k_of_n(pass_when: str, assertions: list[str | AssertionItem]) -> None:
    required = sum(1 for a in assertions if isinstance(a, str) or a.required)
    match = _PASS_WHEN.match(pass_when)
    if match and match.group(2) is not None and int(match.group(2)) > required:
        raise ValueError(f"pass_when {pass_when} needs at least {match.group(2)} required assertions, "
                         f"there are {required}")


class LlmJudgeConfig(JudgeSettings):
    nl_assertions: list[str | AssertionItem] = Field(default_factory=list)
    pass_when: str = "all"
    rubric: RubricConfig | None = None
    include_in_prompt: list[IncludeItem] = Field(default_factory=lambda: ["input", "final_answer"], min_length=1)
    # The trace field judged as the response (DataModel.md: `field: output.thinking`); it takes
    # the place of the final answer in the prompt.
    field: str = "output.final_answer"

    @field_validator("field")
    @classmethod
    def _field_path(cls, value: str) -> str:
        return check_field_path(value)

    def trace_fields_read(self) -> tuple[str, ...]:
        """The judged ``field`` and the trace fields ``include_in_prompt`` shows (checked against ``trace.capture``)."""
        sections = {"thinking": "output.thinking", "structured": "output.structured", "tool_calls": "tool_calls"}
        shown = [sections.get(item, item) for item in self.include_in_prompt
                 if item not in ("input", "final_answer", "expected")]
        return (self.field, *shown)

    @field_validator("include_in_prompt")
    @classmethod
    def _includes(cls, value: list[str]) -> list[str]:
        from evalh_pipeline.common.fields import FieldPath

        for item in value:
            if item in _SECTION_NAMES:
                continue
            try:
                FieldPath(item)
            except ValueError:
                raise ValueError(f"include_in_prompt entry {item!r} is neither a section "
                                 f"({', '.join(_SECTION_NAMES)}) nor a JSONPath into the trace") from None
        return value

    @model_validator(mode="before")
    @classmethod
    def _eval_harness_keys(cls, data: Any) -> Any:
        return eval_harness_keys.llm_judge(data)

    @field_validator("pass_when")
    @classmethod
    def _pass_when_form(cls, value: str) -> str:
        return check_pass_when(value)

    @model_validator(mode="after")
    def _something_to_judge(self) -> "LlmJudgeConfig":
        if not self.nl_assertions and self.rubric is None:
            raise ValueError("give nl_assertions, a rubric, or both")
        check_k_of_n(self.pass_when, self.nl_assertions)
        return self

    def config_warnings(self) -> dict[Any, str]:
        if not is_keyword_judge(self.model):
            return {}
        notes: dict[Any, str] = unchecked_assertions(self.nl_assertions, "nl_assertions")
        if self.rubric is not None and not quoted_phrases(self.rubric.criteria):
            notes[("rubric", "criteria")] = unchecked_warning("the rubric criteria", self.rubric.criteria)
        return notes

    @property
    def assertions(self) -> list[Assertion]:
        return [Assertion(a) if isinstance(a, str) else Assertion(a.text, a.required) for a in self.nl_assertions]


def unchecked_assertions(assertions: list[str | AssertionItem], key: str) -> dict[Any, str]:
    """(key, index) -> the load warning, for each assertion the bundled keyword judge has
    nothing to check in (no quoted phrase: it passes for any answer)."""
    texts = [a if isinstance(a, str) else a.text for a in assertions]
    return {(key, i): unchecked_warning("assertion", text) for i, text in enumerate(texts) if not quoted_phrases(text)}


def assertions_pass(pass_when: str, required_results: list[bool]) -> bool:
    """Whether the required assertions' verdicts satisfy ``pass_when`` (none required: pass)."""
    if not required_results:
        return True
    held = sum(required_results)
    if pass_when == "all":
        return held == len(required_results)
    if pass_when == "any":
        return held >= 1
    if pass_when == "majority":
        return held * 2 > len(required_results)
    return held >= int(pass_when.removeprefix("k_of_n="))


class LlmJudge(Evaluator[LlmJudgeConfig]):
    """Asks a judge model, in one call, about every assertion and/or the rubric.

    The judge sees the sections listed in ``include_in_prompt`` (default input and final
    answer; thinking only when listed; ``expected`` gives the case's ground truth) and must
    answer JSON matching a schema. Score: the fraction of assertions that held, or the
    rubric score when there are no assertions. A judge that cannot answer (after one
    retry) raises, so the result carries ``error``.
    """

    calls_model = True

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        self.judge = Judge(self.config, self.context)
        self._assertions = self.config.assertions
        self._rubric = self.config.rubric.spec() if self.config.rubric else None

    def bypass_cache(self) -> None:
        self.judge.bypass_cache()

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        if trace.error is not None:
            return Verdict(False, f"the system failed ({trace.error.type}): no answer to judge",
                           detail={"judged": False})
        include = list(self.config.include_in_prompt)
        if self.config.field not in ("output.final_answer", "final_answer") and "final_answer" not in include:
            include.append("final_answer")  # the judged field is always shown, in the final answer's place
        prompt = build_prompt(case, trace, include, self._assertions, self._rubric, field=self.config.field)
        outcome = await self.judge.ask(prompt)
        return self.verdict(outcome)

    def verdict(self, outcome: JudgeOutcome) -> Verdict:
        """Turn a validated judge answer into pass/fail, score, reason and detail."""
        detail: dict[str, Any] = self.judge.detail(outcome)
        detail["included"] = list(self.config.include_in_prompt)
        if self.config.field != "output.final_answer":
            detail["field"] = self.config.field
        reasons, passes, score = [], [], None
        if self._assertions:
            by_index = {item["index"]: item for item in outcome.answer["assertions"]}
            rows = [{"text": a.text, "required": a.required, "passed": by_index[i]["passed"],
                     "reason": by_index[i]["reason"]} for i, a in enumerate(self._assertions, start=1)]
            detail["assertions"] = rows
            detail["pass_when"] = self.config.pass_when
            required = [row["passed"] for row in rows if row["required"]]
            ok = assertions_pass(self.config.pass_when, required)
            passes.append(ok)
            score = sum(row["passed"] for row in rows) / len(rows)
            failed = [f"{row['text']!r}: {row['reason']}" for row in rows if not row["passed"]]
            reasons.append(f"{sum(required)} of {len(required)} required assertion(s) held "
                           f"(pass_when {self.config.pass_when})" + (f"; not held: {'; '.join(failed)}" if failed else ""))
            if is_keyword_judge(self.config.model):
                # The bundled judge's rule, said where the verdict is read: a pass it did not check.
                unchecked = [repr(row["text"]) for row in rows if row["passed"] and not quoted_phrases(row["text"])]
                if unchecked:
                    reasons.append(f"held unchecked (no \"quoted phrase\": the keyword judge passes any answer): "
                                   f"{', '.join(unchecked)}")
        if self._rubric is not None:
            rubric = self.config.rubric
            assert rubric is not None
            answer = outcome.answer["rubric"]
            ok = rubric.passes(answer["score"])
            passes.append(ok)
            detail["rubric"] = {"score": answer["score"], "pass_threshold": rubric.pass_threshold,
                                "scale": list(self._rubric.scale), "passed": ok, "reason": answer["reason"]}
            if score is None:
                score = rubric.numeric(answer["score"])
            reasons.append(f"rubric score {answer['score']} "
                           f"({'>=' if ok else 'below'} pass_threshold {rubric.pass_threshold}): {answer['reason']}")
        passed = all(passes)
        if outcome.over_limit:
            reasons.insert(0, outcome.over_limit)
            passed = False
        return Verdict(passed, "; ".join(reasons), score=score, detail=detail)

