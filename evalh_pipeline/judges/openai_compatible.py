"""An OpenAI-compatible chat-completions judge backend (OpenAI, vLLM, Ollama, OpenRouter, ...)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from evalh_pipeline.judges.base import JudgeBackend, JudgeReply

# Reasoning models refuse `max_tokens` and any temperature but the default.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")


class OpenAICompatibleBackend(JudgeBackend):
    """``POST {base_url}/chat/completions`` with a ``json_schema`` response format.

    Base URL and key come from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` unless the
    evaluator config names others (``base_url``, ``api_key_env``).
    """

    name: ClassVar[str] = "openai_compatible"
    base_url_env: ClassVar[str] = "OPENAI_BASE_URL"
    api_key_env: ClassVar[str] = "OPENAI_API_KEY"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    model_patterns: ClassVar[tuple[str, ...]] = ("gpt-*", "chatgpt-*", "o[0-9]", "o[0-9]-*")
    providers: ClassVar[tuple[str, ...]] = ("openai",)

    def request(self, system: str, user: str, json_schema: dict[str, Any] | None) -> tuple[str, dict[str, str], dict[str, Any]]:
        headers = {"content-type": "application/json"}
        if self.settings.api_key:
            headers["authorization"] = f"Bearer {self.settings.api_key}"
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
        return f"{self.settings.base_url}/chat/completions", headers, body

    def parse(self, body: Any) -> JudgeReply:
        message = body["choices"][0]["message"]
        content = message.get("content")
        if isinstance(content, list):  # some servers return content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        usage = body.get("usage") or {}
        cost = usage.get("cost")
        return JudgeReply(text=content or "", tokens_in=usage.get("prompt_tokens"),
                          tokens_out=usage.get("completion_tokens"), model=body.get("model") or self.settings.model,
                          cost_usd=float(cost) if isinstance(cost, (int, float)) else None)
