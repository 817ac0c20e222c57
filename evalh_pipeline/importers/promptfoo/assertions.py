"""promptfoo assertions (``assert:`` entries) as evalh evaluators.

An assertion maps to an existing evaluator only where the verdict is the same (the
``contains`` family to ``contains_text``, case-sensitive unless ``i``); the other
deterministic types go to ``promptfoo_assert``, which follows promptfoo's own rules.
``llm-rubric`` goes to ``llm_judge`` with the rubric as its one assertion: the verdict comes
from evalh's judge prompt, not promptfoo's, which the report says. A known promptfoo type
with no counterpart here is reported and left out; a type promptfoo does not know is bad input.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from evalh_pipeline.evaluators.promptfoo_assert import (
    PromptfooAssertConfig,
    contains_value,
    js_string,
    split_comma_separated,
)
from evalh_pipeline.importers.promptfoo.source import Source
from evalh_pipeline.importers.report import BadSource
from evalh_pipeline.importers.promptfoo.templates import has_template, render, to_evalh

#: promptfoo 0.121.20's assertion types (BaseAssertionTypesSchema in src/types/index.ts),
#: each also with ``not-``; plus its special types.
KNOWN_TYPES = frozenset((
    "agent-rubric", "answer-relevance", "bleu", "classifier", "contains", "contains-all", "contains-any",
    "contains-html", "contains-json", "contains-sql", "contains-xml", "context-faithfulness", "context-recall",
    "context-relevance", "conversation-relevance", "cost", "equals", "factuality", "finish-reason", "g-eval",
    "gleu", "guardrails", "icontains", "icontains-all", "icontains-any", "is-html", "is-json", "is-refusal",
    "is-sql", "is-valid-function-call", "is-valid-openai-function-call", "is-valid-openai-tools-call", "is-xml",
    "javascript", "latency", "levenshtein", "llm-rubric", "pi", "meteor", "model-graded-closedqa",
    "model-graded-factuality", "moderation", "perplexity", "perplexity-score", "python", "regex", "rouge-n",
    "ruby", "similar", "similar:cosine", "similar:dot", "similar:euclidean", "starts-with", "tool-call-f1",
    "skill-used", "trajectory:goal-success", "trajectory:tool-args-match", "trajectory:step-count",
    "trajectory:tool-sequence", "trajectory:tool-used", "trace-error-spans", "trace-span-count",
    "trace-span-duration", "search-rubric", "webhook", "word-count",
))
SPECIAL_TYPES = frozenset(("select-best", "human", "max-score", "assert-set"))
_CONTAINS = {"contains": ("all_of", True), "icontains": ("all_of", False), "contains-all": ("all_of", True),
             "icontains-all": ("all_of", False), "contains-any": ("any_of", True), "icontains-any": ("any_of", False)}
_PROMPTFOO_ASSERT = ("equals", "starts-with", "regex", "is-json", "contains-json", "levenshtein", "latency", "cost", "bleu",
                     "rouge-n",
                     "contains", "icontains", "contains-any", "icontains-any", "contains-all", "icontains-all")
_GRADED = ("model-graded-closedqa", "factuality", "answer-relevance")
_THRESHOLD_TYPES = ("levenshtein", "latency", "cost", "similar", "bleu", "rouge-n", "answer-relevance")
_ASSERTION_KEYS = {"type", "value", "threshold", "weight", "metric", "config", "transform"}


@dataclass
class Outputs:
    """What promptfoo hands assertions besides the answer text: with an ``openai:chat`` provider
    that has ``tools``, the tool calls when the model makes some (providers.py)."""

    openai_tool_calls: bool = False
    tools: list[dict[str, Any]] | None = None  # the tools of those providers, when they all have the same
    tools_differ: bool = False
    #: The prompt every variant sends (an evalh template over the case); None when they differ.
    prompt: str | None = None
    #: The imported providers' (label, id), for a test's ``providers`` filter.
    providers: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Judge:
    """The grading model of ``llm-rubric`` (``defaultTest.options.provider``, else promptfoo's default)."""

    model: str = "gpt-4.1-mini"  # the judge reads OPENAI_BASE_URL and OPENAI_API_KEY, as promptfoo's grader
    #: ``options.rubricPrompt`` (the test's, else defaultTest's): llm-rubric's grading prompt.
    rubric_prompt: Any = None


def check_type(source: Source, assertion: Any, place: tuple[str, str, int | None]) -> str:
    """The assertion's type; one that promptfoo does not know is bad input."""
    kind = assertion.get("type") if isinstance(assertion, dict) else None
    if not isinstance(kind, str):
        raise BadSource(*_at(place), "an assertion needs a type")
    base = kind.removeprefix("not-")
    if base not in KNOWN_TYPES and kind not in SPECIAL_TYPES:
        raise BadSource(*_at(place), f"unknown assertion type {kind!r}")
    return kind


def _at(place: tuple[str, str, int | None]) -> tuple[str, int | None, str]:
    file, where, line = place
    return file, line, where


def map_assertion(source: Source, assertion: dict[str, Any], variables: dict[str, Any] | None,
                  place: tuple[str, str, int | None], judge: Judge,
                  outputs: Outputs | None = None) -> tuple[str, dict[str, Any]] | None:
    """(evaluator type, config) for one assertion, its value rendered with the test's
    ``variables`` (None: an eval-level assertion, whose value must not use any); None when it
    does not map (reported)."""
    kind = check_type(source, assertion, place)
    inverse, base = kind.startswith("not-"), kind.removeprefix("not-")
    value = assertion.get("value")
    if has_template(value) and not str(value).startswith("file://"):
        value, problems = render(str(value), variables or {})
        if problems:
            source.note(place, f"assertion value: {'; '.join(problems)} does not map", "assertion left out")
            return None
    if isinstance(value, str) and value.startswith("file://") and base not in ("python", "javascript"):
        source.note(place, f"{kind} value from {value}", "assertion left out (file values are read only for python)")
        return None
    for key in sorted(set(assertion) - _ASSERTION_KEYS):
        source.note(place, f"assertion key {key!r} not mapped", "left out")
    if assertion.get("config"):
        source.note(place, "assertion config not mapped", "left out", "note")
    threshold = assertion.get("threshold")
    if threshold is not None and base not in (*_THRESHOLD_TYPES, "llm-rubric", "python", "javascript"):
        source.note(place, f"threshold on {kind}", "not used: the assertion's pass/fail is kept", "note")
    if base in _GRADED and judge.rubric_prompt is not None:
        source.note(place, f"rubricPrompt on {kind}", "not used: graded with its own prompt (promptfoo's "
                    "rubricPrompt is carried only into llm-rubric here)")
    if kind == "llm-rubric" and isinstance(value, str) and judge.rubric_prompt is not None:
        rubric_prompt = rubric_template(source, judge.rubric_prompt, variables, place)
        if rubric_prompt is not None:
            if outputs is not None and outputs.openai_tool_calls:
                source.note(place, "llm-rubric reads the answer text here; promptfoo's reads the tool calls when the "
                            "model makes some", "verdicts differ on answers that call tools")
            config = {"check": "llm-rubric", "value": value, "rubric_prompt": rubric_prompt, "model": judge.model}
            if threshold is not None:
                config["threshold"] = threshold
            return ("promptfoo_graded", config)
    return _map(source, base, inverse, value, assertion, place, judge, outputs or Outputs())


def _map(source: Source, base: str, inverse: bool, value: Any, assertion: dict[str, Any],
         place: tuple[str, str, int | None], judge: Judge, outputs: Outputs) -> tuple[str, dict[str, Any]] | None:
    kind = f"{'not-' if inverse else ''}{base}"
    if base in _GRADED:
        return _graded(source, base, inverse, value, place, judge, outputs, assertion.get("threshold"))
    if outputs.openai_tool_calls and base in ("llm-rubric", "similar"):
        source.note(place, f"{kind} reads the answer text here; promptfoo's reads the tool calls when the model makes some",
                    "verdicts differ on answers that call tools")
    if base == "is-valid-openai-tools-call":
        if outputs.tools_differ:
            source.note(place, f"{kind}: the providers have different tools and an evaluator judges every variant",
                        "assertion left out")
            return None
        # src/assertions/openai.ts (index.js:2489-2540): the provider's tools; none fails every answer
        return ("promptfoo_assert", {"assertion": base, "inverse": inverse, "tools": outputs.tools,
                                     "openai_tool_calls": True})
    if base in _CONTAINS and not (inverse and base.endswith("-all")) and not outputs.openai_tool_calls:
        key, sensitive = _CONTAINS[base]
        needles = _needles(base, contains_values(base, value))
        if needles is not None:
            if inverse:
                # not-contains / not-contains-any: none may occur (promptfoo: !includes, !some)
                return ("contains_text", {"all_of": [], "none_of": needles, "case_sensitive": sensitive})
            return ("contains_text", {"all_of": [], key: needles, "none_of": [], "case_sensitive": sensitive})
    if base in _PROMPTFOO_ASSERT:
        config: dict[str, Any] = {"assertion": base, "inverse": inverse}
        if value is not None:
            config["value"] = value
        if base in ("levenshtein", "latency", "cost", "bleu", "rouge-n") and assertion.get("threshold") is not None:
            config["threshold"] = assertion["threshold"]
        if outputs.openai_tool_calls:
            config["openai_tool_calls"] = True
        try:
            PromptfooAssertConfig.model_validate(config)
        except ValidationError as exc:
            problem = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
            source.note(place, f"{kind}: {problem}", "assertion left out (promptfoo fails it with this error)")
            return None
        return ("promptfoo_assert", config)
    if base == "llm-rubric" and not inverse and isinstance(value, str):
        threshold = assertion.get("threshold")
        source.note(place, "llm-rubric is graded by evalh's llm_judge, with its own prompt, not promptfoo's"
                    + (f" (its threshold {threshold} is not used)" if threshold is not None else ""),
                    "verdicts may differ from promptfoo's", "note")
        return ("llm_judge", {"backend": "openai_compatible", "model": judge.model,
                              "nl_assertions": [value]})
    if base in ("python", "javascript"):
        mapped = _script(source, base, inverse, value, assertion, place)
        if mapped is not None and outputs.openai_tool_calls:
            mapped[1]["openai_tool_calls"] = True
        return mapped
    if base == "similar" and not inverse and isinstance(value, str) and value:
        # src/assertions/similar.ts and matchesSimilarity (index.js:698-760): cosine of the two
        # embeddings (OpenAI text-embedding-3-large by default) >= threshold (default 0.75).
        return ("semantic_similarity", {"reference_text": value, "threshold": assertion.get("threshold", 0.75),
                                        "embedder": {"name": "openai_compatible", "model": "text-embedding-3-large"}})
    source.note(place, f"{kind} assertion has no evalh counterpart yet", "assertion left out")
    return None


def rubric_template(source: Source, prompt: Any, variables: dict[str, Any] | None,
                    place: tuple[str, str, int | None]) -> str | list[dict[str, str]] | None:
    """promptfoo's ``rubricPrompt`` as ``promptfoo_graded``'s ``rubric_prompt``: a text, or chat
    messages (a list, or a text that is a JSON list, which promptfoo's OpenAI provider sends as
    messages). matchesLlmRubric renders it with ``output``, ``rubric`` and the test's vars, a var
    of the same name winning (src/matchers.ts: ``{output, rubric, ...vars}``). None (reported):
    a prompt that does not map, llm-rubric then graded by ``llm_judge``."""
    if isinstance(prompt, str) and prompt.startswith("file://"):
        source.note(place, f"rubricPrompt from {prompt}", "not used: llm-rubric graded by llm_judge's own prompt")
        return None
    messages: Any = prompt
    if isinstance(prompt, str):
        try:
            messages = json.loads(prompt)
        except ValueError:
            messages = prompt
        messages = messages if isinstance(messages, list) else prompt
    if isinstance(messages, str):
        return _rubric_text(source, messages, variables, place)
    if not (isinstance(messages, list) and messages
            and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages)):
        source.note(place, "rubricPrompt that is neither a text nor chat messages",
                    "not used: llm-rubric graded by llm_judge's own prompt")
        return None
    out = []
    for message in messages:
        content = _rubric_text(source, message["content"], variables, place)
        if content is None:
            return None
        out.append({"role": str(message.get("role", "user")), "content": content})
    return out


def _rubric_text(source: Source, text: str, variables: dict[str, Any] | None,
                 place: tuple[str, str, int | None]) -> str | None:
    converted, problems = to_evalh(text)
    if problems:
        source.note(place, f"rubricPrompt: {'; '.join(problems)} does not map",
                    "not used: llm-rubric graded by llm_judge's own prompt")
        return None
    for name in ("output", "rubric"):
        if name not in (variables or {}):
            converted = re.sub(rf"\{{\{{ input\.vars\.{name}(?=[ |])", f"{{{{ {name}", converted)
    return converted


def _graded(source: Source, base: str, inverse: bool, value: Any, place: tuple[str, str, int | None],
            judge: Judge, outputs: Outputs, threshold: Any = None) -> tuple[str, dict[str, Any]] | None:
    """``model-graded-closedqa`` / ``factuality`` / ``answer-relevance`` as ``promptfoo_graded``:
    the grader reads the prompt the variant sent, so every variant must send the same one."""
    kind = f"{'not-' if inverse else ''}{base}"
    if base != "answer-relevance" and not isinstance(value, str):
        # src/assertions/factuality.ts and modelGradedClosedQa.ts (index.js:1629, :2385)
        source.note(place, f"{kind} without a string value", "assertion left out (promptfoo fails it)")
        return None
    if outputs.prompt is None:
        source.note(place, f"{kind} grades the answer against the prompt, and the variants send different prompts",
                    "assertion left out")
        return None
    if outputs.openai_tool_calls:
        source.note(place, f"{kind} reads the answer text here; promptfoo's reads the tool calls when the model makes some",
                    "verdicts differ on answers that call tools")
    # promptfoo's handlers read no `not-` (index.js:1628-1635, :2384-2391): the verdict is the positive form's
    config: dict[str, Any] = {"check": base, "prompt": outputs.prompt, "model": judge.model}
    if base == "answer-relevance":
        if threshold is not None:
            config["threshold"] = threshold
    else:
        config["value"] = value
    return ("promptfoo_graded", config)


def _script(source: Source, language: str, inverse: bool, value: Any, assertion: dict[str, Any],
            place: tuple[str, str, int | None]) -> tuple[str, dict[str, Any]] | None:
    """A ``python``/``javascript`` assertion as ``promptfoo_script`` (a file's source is copied in)."""
    kind = f"{'not-' if inverse else ''}{language}"
    if language == "javascript" and shutil.which("node") is None:
        source.note(place, f"{kind} assertion needs Node.js, which is not installed here",
                    "assertion left out: install Node and import again to judge this test as promptfoo does")
        return None
    if not isinstance(value, str) or not value.strip():
        source.note(place, f"{kind} assertion without code", "assertion left out")
        return None
    config: dict[str, Any] = {"language": language, "inverse": inverse}
    if assertion.get("threshold") is not None:
        config["threshold"] = assertion["threshold"]
    if not value.startswith("file://"):
        return ("promptfoo_script", {**config, "code": value})
    target, _, function = value.removeprefix("file://").partition(":")
    allowed = (".py",) if language == "python" else (".js", ".cjs")
    path = source.resolve(f"file://{target}", place)[0]
    if path.suffix.lower() not in allowed:
        source.note(place, f"{kind} assertion in {source.relative(path)}",
                    f"assertion left out: only {', '.join(allowed)} files are imported")
        return None
    config.update(source=source.read_text(path), name=path.name)
    if function:
        config["function"] = function
    return ("promptfoo_script", config)


def _needles(base: str, value: Any) -> list[str] | None:
    """The strings a contains-family value names; None when promptfoo would reject the value."""
    if base.endswith(("-any", "-all")):
        return [js_string(v) for v in value] if isinstance(value, list) and value else None
    return [js_string(value)] if contains_value(value) else None


def contains_values(base: str, value: Any) -> Any:
    """The value of a contains-family assertion as promptfoo reads it: a string is split on
    commas for the -any/-all forms (src/assertions/contains.ts, dist/src/index.js:1468)."""
    if base.endswith(("-any", "-all")) and isinstance(value, str):
        try:
            return split_comma_separated(value)
        except ValueError:
            return None
    return value
