"""Judge prompts: what the judge sees, the JSON Schema its answer must match, and reading it.

The prompt is a system message (the judge's role) and a user message of ``## `` sections:
the material listed in ``include_in_prompt``, then the numbered assertions and/or the
rubric. The fake judge server (tests/support/fake_judge_server.py) reads the same section titles.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from evalh_pipeline.errors import CellError
from evalh_pipeline.models import EvalCase, Trace

SYSTEM_PROMPT = (
    "You are a strict, impartial evaluator of an AI system's response. Judge only from the material "
    "given; if the material does not support a claim, it does not hold. Give a short reason for "
    "every verdict. Answer with one JSON object and nothing else."
)

# include_in_prompt item -> section title. Thinking is only ever shown when listed.
SECTIONS = {
    "input": "Input",
    "final_answer": "Final answer",
    "thinking": "Thinking",
    "structured": "Structured output",
    "tool_calls": "Tool calls",
    "expected": "Ground truth (expected)",
}
ASSERTIONS_TITLE = "Assertions"
# The section of llm_judge's `field:` (the judged field in the final answer's place).
RESPONSE_FIELD_TITLE = "Response field"
RUBRIC_TITLE = "Rubric"
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


@dataclass(frozen=True)
class Assertion:
    text: str
    required: bool = True


@dataclass(frozen=True)
class RubricSpec:
    """``scale`` lists the allowed scores worst to best; ``levels`` describes some of them."""

    criteria: str
    scale: tuple[int | float | str, ...]
    levels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class JudgePrompt:
    system: str
    user: str
    schema: dict[str, Any]

    @property
    def sha256(self) -> str:
        """Hash of the whole prompt and schema (``detail.judge_prompt_hash``)."""
        body = json.dumps([self.system, self.user, self.schema], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


class BadJudgeAnswer(CellError, ValueError):
    """The judge's reply is not JSON, or not JSON matching the verdict schema."""


def thinking_text(trace: Trace) -> str:
    """All the thinking a trace surfaced: ``output.thinking`` and every ``messages[].thinking``."""
    texts = [trace.output.thinking or ""] + [m.thinking for m in trace.messages if m.thinking]
    return "\n".join(t for t in texts if t)


def _render(value: Any) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False,
                                                            default=str)


FIELD_TITLE = "Field "  # a section for an include_in_prompt path: "## Field output.structured.price"


def section_title(item: str) -> str:
    """The heading of an include_in_prompt item: a named section, or ``Field <path>``."""
    return SECTIONS.get(item) or f"{FIELD_TITLE}{item}"


def _material(item: str, case: EvalCase, trace: Trace) -> str:
    if item not in SECTIONS:
        # eval-harness's form: a JSONPath into the trace, with the case under `case`.
        from evalh_pipeline.common.fields import FieldPath

        payload = trace.model_dump(mode="json")
        payload["case"] = case.model_dump(mode="json")
        return _render(FieldPath(item).get(payload))
    if item == "input":
        return _render(case.input or trace.input)
    if item == "final_answer":
        return _render(trace.output.final_answer)
    if item == "thinking":
        return _render(thinking_text(trace))
    if item == "structured":
        return _render(trace.output.structured)
    if item == "tool_calls":
        return _render([{"name": c.name, "arguments": c.arguments} for c in trace.tool_calls])
    if item == "expected":
        # Only what the case author wrote: empty default lists are not ground truth.
        return _render(case.expected.model_dump(exclude_defaults=True))
    raise ValueError(f"unknown include_in_prompt item {item!r}")


def verdict_schema(n_assertions: int, scale: tuple[int | float | str, ...] | None) -> dict[str, Any]:
    """The JSON Schema the judge's answer must match."""
    properties: dict[str, Any] = {}
    if n_assertions:
        properties["assertions"] = {
            "type": "array", "minItems": n_assertions, "maxItems": n_assertions,
            "items": {
                "type": "object", "additionalProperties": False, "required": ["index", "passed", "reason"],
                "properties": {"index": {"type": "integer", "minimum": 1, "maximum": n_assertions},
                               "passed": {"type": "boolean"}, "reason": {"type": "string"}},
            },
        }
    if scale is not None:
        properties["rubric"] = {
            "type": "object", "additionalProperties": False, "required": ["score", "reason"],
            "properties": {"score": {"enum": list(scale)}, "reason": {"type": "string"}},
        }
    return {"type": "object", "additionalProperties": False, "required": sorted(properties), "properties": properties}


def build_prompt(case: EvalCase, trace: Trace, include: list[str], assertions: list[Assertion],
                 rubric: RubricSpec | None, field: str | None = None) -> JudgePrompt:
    """The judge prompt for one trace.

    ``field`` (llm_judge's ``field:``, e.g. ``output.thinking``) replaces the final answer as
    the response judged: its section is titled with the path and shows that field's value.
    """
    parts = ["Judge the AI system's response below."]
    for item in include:
        if item == "final_answer" and field is not None and field not in ("output.final_answer", "final_answer"):
            from evalh_pipeline.common.fields import FieldPath

            parts.append(f"## {RESPONSE_FIELD_TITLE} {field}\n{_render(FieldPath(field).get(trace))}")
            continue
        parts.append(f"## {section_title(item)}\n{_material(item, case, trace)}")
    if assertions:
        lines = "\n".join(f"{i}. {a.text}" for i, a in enumerate(assertions, start=1))
        parts.append(f"## {ASSERTIONS_TITLE}\nJudge each assertion independently of the others. For each, give "
                     f"its index, whether it holds (passed) and a one-sentence reason.\n{lines}")
    if rubric is not None:
        levels = "".join(f"\n- {score}: {text}" for score, text in rubric.levels)
        parts.append(f"## {RUBRIC_TITLE}\nCriteria: {rubric.criteria}\n"
                     f"Scale (worst to best): {json.dumps(list(rubric.scale))}{levels}\n"
                     f"Give one score from the scale and a one-sentence reason.")
    keys = " and ".join(k for k, on in (("assertions", bool(assertions)), ("rubric", rubric is not None)) if on)
    parts.append(f"Answer with a JSON object with {keys}.")
    schema = verdict_schema(len(assertions), rubric.scale if rubric else None)
    return JudgePrompt(system=SYSTEM_PROMPT, user="\n\n".join(parts), schema=schema)


def parse_answer(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The judge's JSON answer, validated; raises :class:`BadJudgeAnswer` saying what is wrong."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        answer = json.loads(body)
    except ValueError:
        # Models sometimes wrap the object in prose: take the outermost braces.
        start, end = body.find("{"), body.rfind("}")
        try:
            answer = json.loads(body[start:end + 1]) if 0 <= start < end else None
        except ValueError:
            answer = None
        if answer is None:
            raise BadJudgeAnswer(f"judge answer is not JSON: {text[:200]!r}") from None
    errors = sorted(Draft202012Validator(schema).iter_errors(answer), key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(top)"
        raise BadJudgeAnswer(f"judge answer does not match the verdict schema at {where}: {errors[0].message}")
    items = answer.get("assertions")
    if items is not None and sorted(item["index"] for item in items) != list(range(1, len(items) + 1)):
        raise BadJudgeAnswer("judge answer does not give exactly one verdict per assertion index")
    verdicts: dict[str, Any] = answer  # the schema's top level is an object
    return verdicts
