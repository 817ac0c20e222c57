"""``openai_score_model``: a hosted OpenAI Evals ``score_model`` grader, asked and read as
OpenAI's graders guide defines it (https://developers.openai.com/api/docs/guides/graders,
"Templating" and "Score model graders"; the object: ``ScoreModelGrader`` of the API reference).

- The grader's ``input`` messages are templates over two namespaces only, ``item`` (the
  datasource item) and ``sample`` (``sample.output_text``: the answer; ``sample.output_json``:
  the answer parsed when it is JSON), with JSON-path-like access (``{{item.a.b}}``).
- The grading model is asked for structured output, ``{"steps": [{"description",
  "conclusion"}], "result": <number>}`` (the guide's model-grader output format); the score is
  ``result``.
- ``range`` (default ``[0, 1]``) bounds the score; it passes when the score is at least
  ``pass_threshold``.

Where the guide is silent evalh decides, and says so in the verdict: a reply that is not that
JSON object, or whose ``result`` is not a number inside ``range``, fails with score 0 (OpenAI's
structured output cannot produce the first; the second is an invalid grade).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import Field, model_validator

from evalh_pipeline.common.fields import as_text
from evalh_pipeline.common.templating import json_text
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, Verdict
from evalh_pipeline.llm.openai_chat import grading_reply
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

# {{ namespace.path }}, whitespace allowed inside the braces (the guide's template syntax).
TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][\w.]*)\s*\}\}")
# The output the grading model is held to (structured outputs, strict JSON schema).
RESPONSE_FORMAT: dict[str, Any] = {"type": "json_schema", "json_schema": {"name": "score_model_grade", "strict": True, "schema": {
    "type": "object", "additionalProperties": False, "required": ["steps", "result"],
    "properties": {
        "steps": {"type": "array", "items": {"type": "object", "additionalProperties": False,
                                             "required": ["description", "conclusion"],
                                             "properties": {"description": {"type": "string"},
                                                            "conclusion": {"type": "string"}}}},
        "result": {"type": "number"}}}}}
# sampling_params keys -> chat-completions request fields.
SAMPLING = {"temperature": "temperature", "top_p": "top_p", "seed": "seed",
            "max_completions_tokens": "max_completion_tokens", "reasoning_effort": "reasoning_effort"}


def render_grader_template(text: str, item: dict[str, Any], sample: dict[str, Any] | None = None) -> str:
    """``text`` with ``{{item.*}}`` and ``{{sample.*}}`` replaced (text as it is, other values
    as JSON, a missing path empty); any other ``{{...}}`` is left as written, and so is
    ``{{sample.*}}`` without a ``sample`` (an import renders the item in, the answer comes later)."""
    def value(found: re.Match[str]) -> str:
        head, _, rest = found.group(1).partition(".")
        if head != "item" and (head != "sample" or sample is None):
            return found.group(0)
        current: Any = item if head == "item" else sample
        for part in rest.split(".") if rest else []:
            current = current.get(part) if isinstance(current, dict) else None
        return json_text(current)
    return TEMPLATE.sub(value, text)


class OpenAIScoreModelConfig(EvaluatorConfigModel):
    """The grader's ``input`` messages (templates), the case's datasource ``item``, ``range``,
    ``pass_threshold``, the grading ``model`` and its ``sampling_params``."""

    TRACE_FIELDS = ("output.final_answer",)

    input: list[dict[str, str]] = Field(min_length=1)
    item: dict[str, Any] = Field(default_factory=dict)
    range: tuple[float, float] = (0.0, 1.0)
    pass_threshold: float
    model: str = Field(min_length=1)
    sampling_params: dict[str, Any] = Field(default_factory=dict)
    base_url_env: str = "OPENAI_BASE_URL"
    default_base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: float = Field(default=120.0, gt=0)

    @model_validator(mode="after")
    def _checked(self) -> OpenAIScoreModelConfig:
        if not self.range[0] < self.range[1]:
            raise ValueError(f"range must be [low, high] with low < high, not {list(self.range)}")
        unknown = sorted(set(self.sampling_params) - set(SAMPLING))
        if unknown:
            raise ValueError(f"sampling_params: {', '.join(unknown)} not known (allowed: {', '.join(SAMPLING)})")
        for message in self.input:
            if set(message) - {"role", "content"} or not isinstance(message.get("content"), str):
                raise ValueError("each input message is {role, content} with text content")
        return self


def score_of(reply: str | None, low: float, high: float) -> tuple[float | None, str]:
    """(score, why) of the grading model's reply: its JSON ``result`` when that is a number in
    [low, high]; (None, why not) otherwise."""
    try:
        parsed = json.loads(reply or "")
    except ValueError:
        return None, f"grader reply is not JSON: {(reply or '')[:120]!r}"
    result = parsed.get("result") if isinstance(parsed, dict) else None
    if isinstance(result, bool) or not isinstance(result, (int, float)) or not math.isfinite(result):
        return None, f"grader reply has no numeric result: {(reply or '')[:120]!r}"
    if not low <= result <= high:
        return None, f"grader result {result:g} is outside range [{low:g}, {high:g}]"
    return float(result), ""


class OpenAIScoreModel(Evaluator[OpenAIScoreModelConfig]):
    """Asks the grading model with the grader's messages and passes when its result reaches
    ``pass_threshold`` (see the module doc)."""

    reads_case = False
    calls_model = True  # its grading call is not cached: nothing to bypass

    def grading_body(self, answer: str) -> dict[str, Any]:
        """The chat-completions request that grades ``answer``."""
        cfg = self.config
        sample: dict[str, Any] = {"output_text": answer}
        try:
            sample["output_json"] = json.loads(answer)
        except ValueError:
            pass
        messages = [{"role": m.get("role", "user"), "content": render_grader_template(m["content"], cfg.item, sample)}
                    for m in cfg.input]
        params = {SAMPLING[k]: v for k, v in cfg.sampling_params.items() if v is not None}
        return {"model": cfg.model, "messages": messages, "response_format": RESPONSE_FORMAT, **params}

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        reply = await grading_reply(self.context.env, cfg, self.grading_body(as_text(trace.output.final_answer)))
        detail: dict[str, Any] = {"grader_reply": reply, "model": cfg.model, "range": list(cfg.range)}
        score, why = score_of(reply, *cfg.range)
        if score is None:
            return Verdict(False, why, score=0.0, detail=detail)
        detail["result"] = score
        passed = score >= cfg.pass_threshold
        return Verdict(passed, f"score {score:g} {'>=' if passed else '<'} pass_threshold {cfg.pass_threshold:g}",
                       score=score, detail=detail)
