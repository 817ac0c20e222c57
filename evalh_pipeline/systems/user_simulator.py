"""``user_simulator``: a multi-turn conversation with the system under test, the user played by an LLM.

eval-harness 2.0.2's keys, with its meaning:

- ``inner_system``: the system under test, configured like any ``systems[]`` entry
  (``adapter`` plus that adapter's keys); it is called once per turn;
- ``user_model`` and ``user_persona_prompt`` (the user-role LLM and its system prompt),
  ``user_max_tokens`` (default 512), ``cost_limit_usd`` (per user-model call);
- ``max_turns`` (default 10): a hard ceiling on assistant replies;
- ``stopping_criterion``: ``{type: turn_count, n}`` (after n assistant replies),
  ``{type: content_match, patterns, case_sensitive?}`` (the latest reply contains a
  pattern) or ``{type: judge, model, question}`` (a judge LLM answers yes).

evalh adds ``backend``, ``base_url`` and ``api_key_env`` (as for ``llm_judge``) for the user
and judge models; the key itself comes from the environment, never from YAML.

Each turn the inner system gets the case with ``input.user_message`` set to the current user
message and ``input.conversation`` to the transcript so far. The trace: ``final_answer`` is
the last reply, ``thinking`` every turn's thinking joined, ``messages`` the transcript,
tool calls and results of every turn, token and cost sums, and ``extra.user_simulator =
{turns, stop_reason, user_model, max_turns}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalh_pipeline.common.masking import mask_text
from evalh_pipeline.llm.chat import JudgeBackend, JudgeError, JudgeReply
from evalh_pipeline.llm.registry import resolve_backend
from evalh_pipeline.models import EvalCase, RunVariant, TraceMessage, TraceOutput
from evalh_pipeline.systems.base import (
    AdapterError,
    SystemAdapter,
    SystemConfigModel,
    SystemResponse,
    Workspace,
)

_AFFIRMATIVE = re.compile(r"\b(yes|true|stop|satisfied|done|complete)\b", re.IGNORECASE)
_JUDGE_SYSTEM = "You are a binary judge. Answer only with 'yes' or 'no'."


class StoppingCriterion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["turn_count", "content_match", "judge"]
    n: int | None = Field(default=None, gt=0)
    patterns: list[str] | None = None
    case_sensitive: bool = False
    model: str | None = None
    question: str | None = None

    @model_validator(mode="after")
    def _fields_of_type(self) -> StoppingCriterion:
        if self.type == "turn_count" and self.n is None:
            raise ValueError("stopping_criterion type turn_count needs n (a positive number of replies)")
        if self.type == "content_match" and not (self.patterns and all(self.patterns)):
            raise ValueError("stopping_criterion type content_match needs patterns (a non-empty list of texts)")
        if self.type == "judge" and not (self.model and self.question):
            raise ValueError("stopping_criterion type judge needs model and question")
        return self


class UserSimulatorConfig(SystemConfigModel):
    user_model: str = Field(min_length=1)
    user_persona_prompt: str = Field(min_length=1)
    max_turns: int = Field(default=10, gt=0)
    stopping_criterion: StoppingCriterion
    inner_system: dict[str, Any]
    cost_limit_usd: float | None = Field(default=None, gt=0)
    user_max_tokens: int = Field(default=512, gt=0)
    backend: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None

    @field_validator("user_model")
    @classmethod
    def _served(cls, value: str, info: Any) -> str:
        resolve_backend(value, info.data.get("backend"))
        return value

    @field_validator("inner_system")
    @classmethod
    def _inner(cls, value: dict[str, Any]) -> dict[str, Any]:
        from evalh_pipeline.systems.registry import SYSTEMS

        adapter = value.get("adapter")
        if not isinstance(adapter, str) or not adapter:
            raise ValueError("inner_system.adapter is required (the system under test, e.g. http)")
        if adapter == "user_simulator":
            raise ValueError("inner_system cannot be another user_simulator")
        from evalh_pipeline.registry import UnknownTypeError

        try:
            cls_ = SYSTEMS.get(adapter)
        except UnknownTypeError as exc:
            raise ValueError(f"inner_system.adapter: {exc}") from None
        try:
            cls_.Config.model_validate({k: v for k, v in value.items() if k != "adapter"})
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ValueError(f"inner_system.{where}: {err['msg'].removeprefix('Value error, ')}") from None
        return value

    @model_validator(mode="after")
    def _judge_model(self) -> UserSimulatorConfig:
        if self.stopping_criterion.type == "judge":
            resolve_backend(self.stopping_criterion.model or "", self.backend)
        return self


class UserSimulatorSystem(SystemAdapter[UserSimulatorConfig]):
    """Drives a conversation between a simulated user (an LLM) and ``inner_system``."""

    @classmethod
    def works_outside_sandbox(cls, config: dict[str, Any]) -> bool:
        from evalh_pipeline.systems.registry import SYSTEMS

        inner = config.get("inner_system") or {}
        return SYSTEMS.get(inner["adapter"]).works_outside_sandbox(inner) if "adapter" in inner else False

    async def start(self) -> None:
        from evalh_pipeline.systems.registry import SYSTEMS

        cfg: UserSimulatorConfig = self.config
        inner_config = {k: v for k, v in cfg.inner_system.items() if k != "adapter"}
        inner_variant = RunVariant(name=self.variant.name, adapter=cfg.inner_system["adapter"], config=inner_config,
                                   metadata=self.variant.metadata, timeout_seconds=self.variant.timeout_seconds)
        self._inner = SYSTEMS.get(cfg.inner_system["adapter"])(inner_variant, self.context)
        await self._inner.start()
        self._user = _backend(cfg.user_model, cfg, cfg.user_max_tokens, self.context.host_env)
        stop = cfg.stopping_criterion
        self._judge = _backend(stop.model or "", cfg, 32, self.context.host_env) if stop.type == "judge" else None
        self._secrets = self.context.secret_values | frozenset(
            key for key in (self._user.settings.api_key, self._judge.settings.api_key if self._judge else None) if key)

    async def close(self) -> None:
        inner = getattr(self, "_inner", None)
        if inner is not None:
            await inner.close()

    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
        cfg: UserSimulatorConfig = self.config
        message = case.input.get("user_message")
        if not isinstance(message, str) or not message:
            raise AdapterError(f"user_simulator: case {case.id!r} needs input.user_message (the first user turn)")
        transcript: list[TraceMessage] = []
        total = SystemResponse()
        thinking: list[str] = []
        sums = {"token_input": 0, "token_output": 0, "token_thinking": 0}
        cost, costed = 0.0, False
        stop_reason = None
        turns = 0
        last = ""
        for turn in range(1, cfg.max_turns + 1):
            transcript.append(TraceMessage(role="user", content=message))
            inner_input = {**case.input, "user_message": message,
                           "conversation": [m.model_dump(mode="json", exclude_none=True) for m in transcript]}
            reply = await self._inner.run(case.model_copy(update={"input": inner_input}), workspace)
            last = reply.output.final_answer or ""
            transcript.append(TraceMessage(role="assistant", content=last, thinking=reply.output.thinking))
            if reply.output.thinking:
                thinking.append(reply.output.thinking)
            total.tool_calls += reply.tool_calls
            total.tool_results += reply.tool_results
            for key in sums:
                sums[key] += getattr(reply.metrics, key) or 0
            if reply.metrics.cost_usd is not None:
                cost, costed = cost + reply.metrics.cost_usd, True
            turns = turn
            stop_reason = await self._stop_reason(turn, last, transcript)
            if stop_reason is not None:
                break
            if turn == cfg.max_turns:
                stop_reason = "max_turns_reached"
                break
            message, used = await self._next_user_turn(transcript)
            sums["token_input"] += used[0]
            sums["token_output"] += used[1]
        total.output = TraceOutput(final_answer=last, thinking="\n\n".join(thinking) or None)
        total.messages = transcript
        for key, value in sums.items():
            setattr(total.metrics, key, value or None)
        total.metrics.cost_usd = cost if costed else None
        total.extra = {"user_simulator": {"turns": turns, "stop_reason": stop_reason, "user_model": cfg.user_model,
                                          "max_turns": cfg.max_turns}}
        return total

    async def _stop_reason(self, turn: int, reply: str, transcript: list[TraceMessage]) -> str | None:
        stop = self.config.stopping_criterion
        if stop.type == "turn_count":
            return f"turn_count(n={stop.n})" if turn >= (stop.n or 0) else None
        if stop.type == "content_match":
            haystack = reply if stop.case_sensitive else reply.lower()
            for pattern in stop.patterns or []:
                if (pattern if stop.case_sensitive else pattern.lower()) in haystack:
                    return f"content_match({pattern!r})"
            return None
        prompt = f"{_render(transcript, '=== Conversation ===')}\n\nQuestion: {stop.question}\nAnswer with just 'yes' or 'no'."
        answer = await self._call(self._judge, _JUDGE_SYSTEM, prompt)
        return f"judge({stop.model})" if _AFFIRMATIVE.search(answer.text) else None

    async def _next_user_turn(self, transcript: list[TraceMessage]) -> tuple[str, tuple[int, int]]:
        prompt = _render(transcript) + "\nUser:"
        reply = await self._call(self._user, self.config.user_persona_prompt, prompt)
        text = reply.text.strip()
        if not text:
            raise AdapterError("user_simulator: the user model returned an empty user turn")
        return text, (reply.tokens_in or 0, reply.tokens_out or 0)

    async def _call(self, backend: JudgeBackend | None, system: str, prompt: str) -> JudgeReply:
        assert backend is not None  # the judge backend is built when the stopping criterion is a judge
        try:
            reply = await backend.complete(system, prompt, None)
        except JudgeError as exc:
            raise AdapterError(mask_text(f"user_simulator: {backend.settings.model}: {exc}", self._secrets)) from None
        limit = self.config.cost_limit_usd
        if limit is not None and backend is self._user:
            spent = _cost(backend.settings.model, reply.tokens_in, reply.tokens_out, reply.cost_usd)
            if spent is not None and spent > limit:
                raise AdapterError(f"user_simulator: a user-model call cost ${spent:.4f}, over cost_limit_usd ${limit}")
        return reply


def _backend(model: str, cfg: UserSimulatorConfig, max_tokens: int, env: Mapping[str, str]) -> JudgeBackend:
    """The chat backend of the user or judge model, built as a judge's is (llm/registry.py)."""
    return resolve_backend(model, cfg.backend).build(env, base_url=cfg.base_url, api_key_env=cfg.api_key_env,
                                                     timeout_seconds=cfg.timeout_seconds, max_tokens=max_tokens)


def _cost(model: str, tokens_in: int | None, tokens_out: int | None, reported: float | None) -> float | None:
    if reported is not None:
        return reported
    from evalh_pipeline.common.pricing import builtin_price_table

    price = builtin_price_table().lookup(model)
    if price is None:
        return None
    return ((tokens_in or 0) * price.input_per_mtok + (tokens_out or 0) * price.output_per_mtok) / 1_000_000


def _render(transcript: list[TraceMessage], title: str | None = None) -> str:
    lines = [title] if title else []
    for m in transcript:
        role = "Assistant" if m.role == "assistant" else "User"
        lines.append(f"{role}: {m.content if isinstance(m.content, str) else m.content!r}")
    return "\n".join(lines)
