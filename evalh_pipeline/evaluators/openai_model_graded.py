"""``openai_model_graded``: openai/evals' ModelBasedClassify, choice for choice.

At commit 4bfc1f58, evals/elsuite/modelgraded/classify.py:55-95 grades a sample by asking a
model (the last completion function: by default the model under test itself) to classify
the answer, with a prompt from the registry's modelgraded specs
(evals/registry/modelgraded/*.yaml). classify_utils.py defines every step repeated here:

- the prompt (a string: one user message, :58-60) gets the answer instructions of
  ``eval_type`` appended to its last message (:65-69, 183-200; ANSWER_PROMPTS, :12-27);
- each message is filled with ``str.format`` from the sample's fields, the spec args and the
  answer under ``completion`` (utils.py:155-185 PromptFn); a chat prompt value is turned
  into text first (prompt/base.py:22-56, ``for_completion=False``);
- the grading call sends ``max_tokens`` (1024), temperature 0, top_p 1, no penalties, n 1;
- the choice is parsed from the reply (get_choice, :113-131: lines, reversed for
  ``cot_classify*``, stripped of ASCII punctuation, the first matching choice by
  ``match_fn``; ``__invalid__`` if none) and scored by ``choice_scores`` (:91-104; an invalid
  choice scores the lowest).

The result's ``score`` is that score and ``detail.choice`` the choice. openai/evals reports
the mean score and the count of each choice, not a pass: here a result passes when its
choice has the highest score (no ``choice_scores``: when a valid choice was parsed).
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, model_validator

from evalh_pipeline.common.fields import as_text
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, Verdict
from evalh_pipeline.llm.openai_chat import grading_reply
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

INVALID = "__invalid__"
# classify_utils.py:12-27, verbatim.
ANSWER_PROMPTS = {
    "classify": "Answer the question by printing only a single choice from {choices} (without quotes or punctuation) corresponding to the correct answer with no other text.",
    "classify_cot": "First, answer by printing a single choice from {choices} (without quotes or punctuation) corresponding to the correct answer. Then, from the next line, explain your reasonings step by step.",
    "cot_classify": """First, write out in a step by step manner your reasoning to be sure that your conclusion is correct. Avoid simply stating the correct answer at the outset. Then print only a single choice from {choices} (without quotes or punctuation) on its own line corresponding to the correct answer. At the end, repeat just the answer by itself on a new line.

Reasoning:""",
    "cot_classify_jp": """まず、一歩一歩あなたの推論を書き出してください。単に正しい答えを最初に述べることを避けてください。次に、{choices}（引用符や句読点なし）から正しい答えに対応する1つの選択肢を単独の行に書きだしてください。最後に、答えだけを新しい行に繰り返してください。

推論：""",
}
# classify_utils.py:28-33.
MATCH_FNS: dict[str, Callable[[str, str], Any]] = {
    "include": lambda x, y: float(x in y),
    "exact": lambda x, y: float(x == y),
    "endswith": lambda x, y: x.endswith(y),
    "starts_or_endswith": lambda x, y: x.startswith(y) or x.endswith(y),
}


def chat_to_text(messages: list[dict[str, Any]]) -> str:
    """openai/evals' ``chat_prompt_to_text_prompt(..., for_completion=False)`` (prompt/base.py:22-56)."""
    if len(messages) == 1:
        return str(messages[0]["content"])
    prefixes = {"system": "", "example_user": "User: ", "example_assistant": "Assistant: "}
    text = ""
    for message in messages:
        role = message["name"] if "name" in message else message["role"]
        text += f"{prefixes.get(role, role.capitalize() + ': ')}{message['content']}\n"
    return text.lstrip()


def get_choice(text: str, parse_type: str, match_fn: str, choices: list[str]) -> str:
    """classify_utils.py:113-131."""
    match = MATCH_FNS[match_fn]
    lines = text.strip().split("\n")
    if parse_type.startswith("cot_classify"):
        lines = lines[::-1]
    for line in lines:
        line = "".join(c for c in line.strip() if c not in string.punctuation)
        if not line:
            continue
        for choice in choices:
            if match(line, choice):
                return choice
    return INVALID


class ModelGradedConfig(EvaluatorConfigModel):
    # The spec (evals/registry/modelgraded/<name>.yaml), as the import copies it.
    prompt: str | list[dict[str, Any]]
    choice_strings: list[str] = Field(min_length=1)
    choice_scores: dict[str, float] | None = None
    # The answer instructions appended (the eval's ``eval_type``) and how the reply is parsed
    # (the spec's ``eval_type``, else the eval's).
    eval_type: Literal["classify", "classify_cot", "cot_classify", "cot_classify_jp"] | None = None
    parse_type: str
    match_fn: Literal["include", "exact", "endswith", "starts_or_endswith"] = "starts_or_endswith"
    # The values the prompt is filled with besides the answer (the sample's fields, the spec args).
    values: dict[str, Any] = Field(default_factory=dict)
    completion_key: str = "completion"  # the name the answer has in the prompt
    model: str = Field(min_length=1)
    base_url_env: str = "OPENAI_BASE_URL"
    default_base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    max_tokens: int = Field(default=1024, gt=0)
    timeout_seconds: float = Field(default=120.0, gt=0)

    @model_validator(mode="after")
    def _scores_cover_choices(self) -> "ModelGradedConfig":
        if self.choice_scores is not None and set(self.choice_strings) - set(self.choice_scores):
            raise ValueError(f"choice_scores must score every choice of {self.choice_strings}")
        return self


class OpenAIModelGraded(Evaluator[ModelGradedConfig]):
    """Asks a model to classify the answer as openai/evals' ModelBasedClassify does (module docstring)."""

    reads_case = False
    calls_model = True  # its grading call is not cached: nothing to bypass

    def grading_prompt(self, answer: str) -> list[dict[str, Any]]:
        """The messages of the grading call for ``answer`` (classify_utils.py:57-72, utils.py:164-176)."""
        cfg = self.config
        prompt: list[dict[str, Any]] = ([{"role": "user", "content": cfg.prompt}] if isinstance(cfg.prompt, str)
                                        else [dict(m) for m in cfg.prompt])
        if cfg.eval_type is not None:
            choices = " or ".join(f'"{choice}"' for choice in cfg.choice_strings)
            prompt[-1]["content"] += "\n\n" + ANSWER_PROMPTS[cfg.eval_type].format(choices=choices)
        values = {key: chat_to_text(value) if _is_chat(value) else value
                  for key, value in {**cfg.values, cfg.completion_key: answer, "n": 1}.items()}
        filled = []
        for message in prompt:
            message = dict(message)
            if "content" in message:
                keys = [field for _, field, _, _ in string.Formatter().parse(message["content"]) if field]
                missing = [key for key in keys if key not in values]
                if missing:
                    raise ValueError(f"the grading prompt needs {missing}, which the sample does not have")
                message["content"] = message["content"].format(**{key: values[key] for key in keys})
            filled.append(message)
        return filled

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        # A reply without content is no completion in openai/evals (completion_fns/openai.py:65-72).
        answer = as_text(trace.output.final_answer if trace.output is not None else None)
        messages = self.grading_prompt(answer)
        reply = await self._call(messages)
        choice = get_choice(reply, cfg.parse_type, cfg.match_fn, cfg.choice_strings)
        score = None
        if cfg.choice_scores is not None:
            score = min(cfg.choice_scores.values()) if choice == INVALID else cfg.choice_scores[choice]
            passed = score == max(cfg.choice_scores.values())
        else:
            passed = choice != INVALID
        detail = {"choice": choice, "grader_reply": reply, "model": cfg.model}
        return Verdict(passed, f"graded {choice!r}" + (f" (score {score})" if score is not None else ""),
                       score=score, detail=detail)

    async def _call(self, messages: list[dict[str, Any]]) -> str:
        cfg = self.config
        body = {"model": cfg.model, "messages": messages, "max_tokens": cfg.max_tokens, "temperature": 0,
                "top_p": 1, "frequency_penalty": 0, "presence_penalty": 0, "n": 1}
        content = await grading_reply(self.context.env, cfg, body)
        if content is None:
            raise RuntimeError("the grading model's reply has no content")
        return content


def _is_chat(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(m, dict) for m in value)
