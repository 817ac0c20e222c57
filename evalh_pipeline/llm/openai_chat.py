"""The OpenAI-compatible chat-completions protocol (OpenAI, vLLM, Ollama, OpenRouter, ...):
the judge backend, the grading call of the OpenAI Evals and promptfoo graders, where a
response holds the answer and usage, and a streamed reply folded back into one (the ``http``
system's ``openai_chat`` and ``deepseek`` presets map and stream it)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from evalh_pipeline.common.http_client import TransportError
from evalh_pipeline.llm.chat import JudgeBackend, JudgeReply, post_json
from evalh_pipeline.llm.settings import resolve_endpoint
from evalh_pipeline.llm.stream import Stream

BASE_URL_ENV = "OPENAI_BASE_URL"
API_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Reasoning models refuse `max_tokens` and any temperature but the default.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")
# Where a chat completion holds the answer, tool calls, usage and id (JSONPath).
RESPONSE_MAPPING: dict[str, str | list[str]] = {
    "final_answer": "$.choices[0].message.content",
    "tool_calls": "$.choices[0].message.tool_calls",
    "tokens.input": "$.usage.prompt_tokens",
    "tokens.output": "$.usage.completion_tokens",
    "tokens.thinking": "$.usage.completion_tokens_details.reasoning_tokens",
    "trace_id": "$.id",
}


def chat_url(base_url: str) -> str:
    """The chat-completions endpoint under ``base_url`` (which ends in ``/v1`` for OpenAI)."""
    return f"{base_url}/chat/completions"


def chat_headers(api_key: str | None) -> dict[str, str]:
    """A JSON request with the key as a bearer token (none when there is no key)."""
    headers = {"content-type": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


def message_text(body: Any) -> str | None:
    """The first choice's message content; content parts (some servers send them) joined."""
    content = body["choices"][0]["message"].get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return None if content is None else str(content)


class OpenAICompatibleBackend(JudgeBackend):
    """``POST {base_url}/chat/completions`` with a ``json_schema`` response format.

    Base URL and key come from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` unless the
    evaluator config names others (``base_url``, ``api_key_env``).
    """

    name: ClassVar[str] = "openai_compatible"
    base_url_env: ClassVar[str] = BASE_URL_ENV
    api_key_env: ClassVar[str] = API_KEY_ENV
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    model_patterns: ClassVar[tuple[str, ...]] = ("gpt-*", "chatgpt-*", "o[0-9]", "o[0-9]-*")
    providers: ClassVar[tuple[str, ...]] = ("openai",)

    def request(self, system: str, user: str, json_schema: dict[str, Any] | None) -> tuple[str, dict[str, str], dict[str, Any]]:
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        if json_schema is not None:  # None: a plain-text reply (the user_simulator's user turns)
            # Not strict: strict mode rejects keywords (minItems, enum of numbers) the verdict schema uses;
            # the reply is validated against the schema locally anyway.
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "verdict", "schema": json_schema, "strict": False}}
        if _REASONING_MODEL.match(self.settings.model):
            body["max_completion_tokens"] = self.settings.max_tokens
        else:
            body["max_tokens"] = self.settings.max_tokens
            body["temperature"] = self.settings.temperature
        return chat_url(self.settings.base_url), chat_headers(self.settings.api_key), body

    def parse(self, body: Any) -> JudgeReply:
        usage = body.get("usage") or {}
        cost = usage.get("cost")
        return JudgeReply(text=message_text(body) or "", tokens_in=usage.get("prompt_tokens"),
                          tokens_out=usage.get("completion_tokens"), model=body.get("model") or self.settings.model,
                          cost_usd=float(cost) if isinstance(cost, (int, float)) else None)


class GradingEndpoint(Protocol):
    """The keys of a grading evaluator's config that say where its grading model is."""

    @property
    def base_url_env(self) -> str: ...
    @property
    def default_base_url(self) -> str: ...
    @property
    def api_key_env(self) -> str: ...
    @property
    def timeout_seconds(self) -> float: ...


async def grading_reply(env: Mapping[str, str], cfg: GradingEndpoint, body: dict[str, Any]) -> str | None:
    """The content of a chat-completions reply to ``body`` (the grader's own request, sent as
    it is) from the endpoint ``cfg`` names (``base_url_env`` / ``default_base_url``, the key
    in ``api_key_env``); None when it has none."""
    base, api_key = resolve_endpoint(env, base_url=None, base_url_env=cfg.base_url_env,
                                     default_base_url=cfg.default_base_url, api_key_env=cfg.api_key_env)
    try:
        response = await post_json(chat_url(base), chat_headers(api_key), body, cfg.timeout_seconds)
    except TransportError as exc:
        raise RuntimeError(f"grading call to {base} failed: {type(exc).__name__}: {exc}") from None
    if response.status_code >= 400:
        raise RuntimeError(f"grading call answered HTTP {response.status_code}: {response.text[:300]}")
    return message_text(response.json())


@dataclass
class ChatStream(Stream):
    """Accumulates OpenAI ``chat.completion.chunk`` events (also DeepSeek's ``reasoning_content``)."""

    id: str | None = None
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    usage: dict[str, Any] | None = None

    def feed(self, event: Any, now: float) -> None:
        if not isinstance(event, dict):
            return
        self.chunks += 1
        self.id = self.id or event.get("id")
        if isinstance(event.get("usage"), dict):
            self.usage = event["usage"]
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            got_token = False
            if isinstance(delta.get("content"), str) and delta["content"]:
                self.content.append(delta["content"])
                got_token = True
            if isinstance(delta.get("reasoning_content"), str) and delta["reasoning_content"]:
                self.reasoning.append(delta["reasoning_content"])
                got_token = True
            for call in delta.get("tool_calls") or []:
                slot = self.tool_calls.setdefault(int(call.get("index", len(self.tool_calls))),
                                                  {"id": None, "type": "function",
                                                   "function": {"name": "", "arguments": ""}})
                slot["id"] = call.get("id") or slot["id"]
                fn = call.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""
                got_token = True
            if got_token:
                self.token(now)

    def text_chars(self) -> int:
        return sum(map(len, self.content)) + sum(map(len, self.reasoning))

    def as_response(self) -> dict[str, Any]:
        """The chunks as one non-streamed chat completion."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) if self.content else None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.tool_calls:
            message["tool_calls"] = [self.tool_calls[i] for i in sorted(self.tool_calls)]
        data: dict[str, Any] = {"id": self.id, "choices": [{"message": message}]}
        if self.usage is not None:
            data["usage"] = self.usage
        return data
