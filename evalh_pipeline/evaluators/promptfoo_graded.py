"""``promptfoo_graded``: promptfoo's ``model-graded-closedqa``, ``factuality`` and
``answer-relevance`` assertions, with promptfoo's verdict rules.

Both ask a grading model about the answer, the prompt the system was sent (promptfoo's
``prompt``; here ``prompt``, an evalh template over the case, rendered per case) and the
assertion's ``value``. The grading prompts say what promptfoo 0.121.20's do
(``OPENAI_CLOSED_QA_PROMPT`` and ``PROMPTFOO_FACTUALITY_PROMPT`` in src/prompts, bundled in
dist/src/graders-DC7jJ-Ea.js:1495-1551) in their own words; the reply is read exactly as
promptfoo reads it (src/matchers, graders-DC7jJ-Ea.js):

- ``model-graded-closedqa`` (matchesClosedQa, :2059-2085): passes when the reply, trailing
  whitespace removed, ends with ``Y``;
- ``factuality`` (matchesFactuality, :2032-2058): the category letter of the first JSON
  object in the reply (a letter outside A-E fails), else the first ``(X)`` letter of the
  legacy format; it passes when its score (``scores``: A, B, C and E 1, D 0 by default,
  getFactualityScoreLookup :1896-1904) is above 0;
- ``answer-relevance`` (matchesAnswerRelevance, index.js:485-540): the grader writes, three
  times, the question the answer replies to (promptfoo's ANSWER_RELEVANCY_GENERATE,
  graders-DC7jJ-Ea.js:1391, sent as one user message); the query (the case's
  ``input.vars.query`` when it is text, else the prompt: answerRelevance.ts, index.js:1061)
  and each question are embedded (``embedder``, by default promptfoo's OpenAI
  ``text-embedding-3-large``); it passes when the mean cosine is at least ``threshold``
  (default 0) less ``Number.EPSILON``;
- ``llm-rubric`` with a ``rubric_prompt`` (promptfoo's ``options.rubricPrompt``; without one
  the importer uses ``llm_judge``): runJsonGradingPrompt as matchesLlmRubric calls it
  (src/matchers.ts): the prompt rendered with ``{{ output }}`` (the answer; a JSON object
  answer as compact JSON, as tryParse and processContextForTemplating give it), ``{{ rubric }}``
  (the assertion's ``value``) and the case's vars (``{{ input.vars.<name> }}``); a prompt given
  as chat messages is sent as those messages, a text as one user message. The first JSON
  object of the reply decides: ``pass`` (absent or null: true; not a boolean: true when its
  text is true/yes/pass/y), ``score`` (not a number: its JavaScript ``Number`` when finite,
  else the pass as 0 or 1) and, with a ``threshold``, ``pass and score >= threshold``;
  no JSON object in the reply fails;
- an empty reply fails ("No output"); none of them reads promptfoo's ``not-`` (the
  handlers in src/assertions/factuality.ts, modelGradedClosedQa.ts and answerRelevance.ts,
  index.js:1628, :2384 and :1056, pass the matcher's verdict on as it is), so ``inverse`` is
  not a key here.

The answer is the trace's text (promptfoo renders a JSON answer parsed, which only changes
what the grader reads for answers that are JSON).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

from pydantic import Field, model_validator

from evalh_pipeline.common.fields import as_text
from evalh_pipeline.common.context import EvaluatorContext
from evalh_pipeline.common.templating import render_case_template
from evalh_pipeline.embedders import build_embedder
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, Verdict
from evalh_pipeline.llm.openai_chat import grading_reply
from evalh_pipeline.evaluators.promptfoo_assert import extract_json_objects
from evalh_pipeline.evaluators.semantic_similarity import cosine
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

_CLOSED_QA = (
    "You judge whether a submitted answer to a task satisfies a criterion. The data:\n"
    "[BEGIN DATA]\n***\n[Task]: {input}\n***\n[Submission]: {completion}\n***\n[Criterion]: {criteria}\n***\n"
    "[END DATA]\n"
    "Does the submission satisfy the criterion? Work through the criterion step by step before you conclude, "
    "without announcing the verdict first. Then write the single letter Y or N, with nothing else, on its own "
    "line, and on the last line write that letter once more by itself.\n\nReasoning:"
)
_FACTUALITY_SYSTEM = (
    "You compare a submitted answer with an expert's answer for their facts only: differences of style, "
    "grammar or punctuation do not count. Put the submission in exactly one category:\n\n"
    "(A) it is a subset of the expert answer and fully consistent with it.\n"
    "(B) it is a superset of the expert answer and fully consistent with it.\n"
    "(C) it has the same details as the expert answer.\n"
    "(D) it disagrees with the expert answer.\n"
    "(E) it differs from the expert answer, but not in a way that matters for the facts.\n\n"
    'Answer with a JSON object and nothing else: {"category": "<one letter A-E>", "reason": "<why, in detail>"}'
)
_FACTUALITY_USER = (
    "Compare these answers.\n\n<question>\n{input}\n</question>\n\n<expert_answer>\n{ideal}\n</expert_answer>\n\n"
    "<submitted_answer>\n{completion}\n</submitted_answer>\n\n"
    "Which category describes how the submitted answer relates to the expert answer?"
)
_QUESTION = (
    "Write the one question that the answer below responds to. Reply with that question only.\n\n"
    "Answer: {answer}\nQuestion:"
)
_EPSILON = 2.220446049250313e-16  # JavaScript's Number.EPSILON
_LEGACY_CHOICE = re.compile(r"\s*\(?([a-eA-E])\)")
_DEFAULT_SCORES: dict[Literal["A", "B", "C", "D", "E"], float] = {"A": 1.0, "B": 1.0, "C": 1.0, "D": 0.0, "E": 1.0}


class PromptfooGradedConfig(EvaluatorConfigModel):
    """The check, its ``value`` (closedqa's criterion, factuality's expert answer), the system's
    ``prompt`` (an evalh template over the case) and the grading model."""

    TRACE_FIELDS = ("output.final_answer",)

    check: Literal["model-graded-closedqa", "factuality", "answer-relevance", "llm-rubric"]
    value: str | None = None
    prompt: str = ""
    threshold: float | None = None  # answer-relevance: promptfoo's `assertion.threshold ?? 0`
    #: llm-rubric's grading prompt: an evalh template (``{{ output }}``, ``{{ rubric }}``, the
    #: case) or chat messages (``role``, ``content`` templates).
    rubric_prompt: str | list[dict[str, str]] | None = None
    embedder: dict[str, Any] = Field(default_factory=lambda: {"name": "openai_compatible",
                                                              "model": "text-embedding-3-large"})
    scores: dict[Literal["A", "B", "C", "D", "E"], float] = Field(default_factory=lambda: dict(_DEFAULT_SCORES))
    model: str = Field(min_length=1)
    base_url_env: str = "OPENAI_BASE_URL"
    default_base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: float = Field(default=120.0, gt=0)

    @model_validator(mode="after")
    def _all_scores(self) -> PromptfooGradedConfig:
        if self.check != "answer-relevance" and self.value is None:
            raise ValueError(f"{self.check} needs a value (promptfoo asserts a string value)")
        if (self.check == "llm-rubric") != (self.rubric_prompt is not None):
            raise ValueError("rubric_prompt goes with llm-rubric, and llm-rubric needs one")
        if self.check in ("model-graded-closedqa", "factuality", "answer-relevance") and not self.prompt:
            raise ValueError(f"{self.check} needs the system's prompt")
        # promptfoo's lookup has every letter (each defaulted): a partial map keeps the defaults
        self.scores = {**_DEFAULT_SCORES, **self.scores}
        return self


def closed_qa_verdict(reply: str) -> tuple[bool, str]:
    """matchesClosedQa's reading of the grader's reply (graders-DC7jJ-Ea.js:2068-2074)."""
    if reply.rstrip().endswith("Y"):
        return True, f"The submission meets the criterion:\n{reply}"
    if reply.rstrip().endswith("N"):
        return False, f"The submission does not meet the criterion:\n{reply}"
    return False, f"Model grader produced a malformed response:\n{reply}"


def factuality_choice(reply: str) -> tuple[str | None, str]:
    """(category letter, reason) of the grader's reply, or (None, why it has none):
    parseFactualityJsonResponse, then parseLegacyFactualityResponse (graders-DC7jJ-Ea.js:1917-1943)."""
    found = extract_json_objects(reply)
    first = found[0] if found else None
    if isinstance(first, dict) and isinstance(first.get("category"), str):
        option = first["category"].strip().upper()
        if not re.fullmatch(r"[A-E]", option):
            return None, f"Invalid category value: {option}"
        reason = first.get("reason")
        return option, reason.strip() if isinstance(reason, str) and reason.strip() else f"Category {option}"
    legacy = _LEGACY_CHOICE.search(reply)
    if legacy is None:
        return None, f"Factuality checker output did not match expected format: {reply}"
    reason = re.search(r"\)\s*(.*)", reply, re.DOTALL)
    return legacy.group(1).upper(), reason.group(1).strip() if reason and reason.group(1) else reply


def js_number(value: Any) -> float:
    """JavaScript's ``Number(value)`` for what a JSON reply holds (NaN when it has none)."""
    if value is None:
        return 0.0
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0.0
        try:
            return float(text) if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text) else math.nan
        except ValueError:
            return math.nan
    return math.nan


def rubric_verdict(reply: str, threshold: float | None) -> tuple[bool, float, str]:
    """(pass, score, reason) of an llm-rubric grader's reply, as runJsonGradingPrompt reads it."""
    found = extract_json_objects(reply)
    if not found:
        return False, 0.0, "Could not extract JSON from llm-rubric response"
    parsed = found[0]
    if not isinstance(parsed, dict):
        return False, 0.0, f"llm-rubric produced malformed response. Output: {reply}"
    passed = parsed.get("pass")
    if passed is None:
        passed = True
    elif not isinstance(passed, bool):
        text = passed if isinstance(passed, str) else json.dumps(passed)
        passed = re.fullmatch(r"(true|yes|pass|y)", text, re.IGNORECASE) is not None
    score = parsed.get("score")
    if "score" not in parsed or isinstance(score, bool) or not isinstance(score, int | float):
        number = js_number(score) if "score" in parsed else math.nan  # absent: JavaScript's undefined
        score = number if math.isfinite(number) else float(passed)
    if threshold is not None:
        passed = passed and score >= threshold
    reason = parsed.get("reason") or ("Grading passed" if passed else f"Score {score:g} below threshold {threshold}")
    return passed, float(score), str(reason)


def rubric_output(answer: str) -> str:
    """The answer as promptfoo's ``{{ output }}`` shows it: tryParse (JSON when it parses),
    processContextForTemplating (an object as compact JSON, a list's objects too) and Nunjucks'
    text of the value (a list joined with commas, null as nothing, a number as JavaScript
    writes it)."""
    try:
        parsed = json.loads(answer)
    except ValueError:
        return answer
    if isinstance(parsed, list):
        return ",".join(_js_text(json.dumps(v, ensure_ascii=False, separators=(",", ":"))
                                 if isinstance(v, dict | list) else v) for v in parsed)
    if isinstance(parsed, dict):
        return json.dumps(parsed, ensure_ascii=False, separators=(",", ":"))
    return _js_text(parsed)


def _js_text(value: Any) -> str:
    """JavaScript's ``String(value)`` for a JSON scalar (null and undefined render empty in Nunjucks)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


class PromptfooGraded(Evaluator[PromptfooGradedConfig]):
    """Asks the grading model as promptfoo's assertion does and reads its reply by promptfoo's rule."""

    calls_model = True  # its grading call is not cached: nothing to bypass

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        cfg = self.config
        self._embedder = build_embedder(cfg.embedder, self.context.env) if cfg.check == "answer-relevance" else None

    def grading_messages(self, case: EvalCase, answer: str) -> list[dict[str, str]]:
        """The grading call's messages for ``answer`` to ``case``."""
        cfg = self.config
        if cfg.rubric_prompt is not None:
            values = {"output": rubric_output(answer), "rubric": cfg.value or ""}
            names = {name: (lambda v=v: v) for name, v in values.items()}
            data = case.model_dump(mode="json")

            def fill(text: str) -> str:
                return render_case_template(text, data, names=names, strict=False)

            if isinstance(cfg.rubric_prompt, list):
                return [{**m, "content": fill(m.get("content", ""))} for m in cfg.rubric_prompt]
            return [{"role": "user", "content": fill(cfg.rubric_prompt)}]
        question = render_case_template(cfg.prompt, case.model_dump(mode="json"), strict=False)
        if cfg.check == "answer-relevance":
            return [{"role": "user", "content": _QUESTION.format(answer=answer)}]
        if cfg.check == "model-graded-closedqa":
            return [{"role": "system", "content": _CLOSED_QA.format(input=question, completion=answer, criteria=cfg.value)}]
        return [{"role": "system", "content": _FACTUALITY_SYSTEM},
                {"role": "user", "content": _FACTUALITY_USER.format(input=question, ideal=cfg.value, completion=answer)}]

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        messages = self.grading_messages(case, as_text(trace.output.final_answer))
        if cfg.check == "answer-relevance":
            return await self._relevance(case, messages)
        reply = await grading_reply(self.context.env, cfg, {"model": cfg.model, "messages": messages, "temperature": 0})
        detail: dict[str, Any] = {"check": cfg.check, "grader_reply": reply, "model": cfg.model}
        if not reply:
            return Verdict(False, "No output", score=0.0, detail=detail)
        if cfg.check == "llm-rubric":
            passed, score, reason = rubric_verdict(reply, cfg.threshold)
            return Verdict(passed, reason, score=score, detail=detail)
        if cfg.check == "model-graded-closedqa":
            passed, reason = closed_qa_verdict(reply)
            return Verdict(passed, reason, score=1.0 if passed else 0.0, detail=detail)
        option, reason = factuality_choice(reply)
        if option is None:
            return Verdict(False, reason, score=0.0, detail=detail)
        # buildFactualityResult (graders-DC7jJ-Ea.js:1905-1916): a letter scored above 0 passes
        detail["category"] = option
        score = cfg.scores[option]  # type: ignore[index]
        return Verdict(score > 0, reason, score=score, detail=detail)

    async def _relevance(self, case: EvalCase, messages: list[dict[str, str]]) -> Verdict:
        """matchesAnswerRelevance (index.js:485-540): three generated questions, each embedded
        against the query; the mean cosine against the threshold."""
        cfg = self.config
        questions: list[str] = []
        for _ in range(3):
            reply = await grading_reply(self.context.env, cfg, {"model": cfg.model, "messages": messages})
            if not reply:
                return Verdict(False, "No output", score=0.0, detail={"check": cfg.check, "questions": questions})
            questions.append(reply)
        given = case.input.get("vars")
        variables = given if isinstance(given, dict) else {}
        query = variables.get("query")
        if not isinstance(query, str):
            query = render_case_template(cfg.prompt, case.model_dump(mode="json"), strict=False)
        assert self._embedder is not None  # built for answer-relevance
        vectors = await self._embedder.embed([query, *questions])
        similarities = [cosine(vectors[0], vector) for vector in vectors[1:]]
        similarity = sum(similarities) / len(similarities)
        threshold = cfg.threshold if cfg.threshold is not None else 0.0
        passed = similarity >= threshold - _EPSILON
        detail = {"check": cfg.check, "questions": questions, "similarities": similarities, "threshold": threshold}
        return Verdict(passed, f"Relevance {similarity:.2f} is {'greater' if passed else 'less'} than threshold "
                               f"{threshold:g}", score=similarity, detail=detail)
