"""The Anthropic messages protocol over plain HTTP (no SDK): the judge backend, the version
header and where a response holds the answer and usage (the ``http`` system's
``anthropic_messages`` preset maps it)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from evalh_pipeline.llm.chat import JudgeBackend, JudgeReply

ANTHROPIC_VERSION = "2023-06-01"
# The headers every messages request carries besides the key.
HEADERS = {"anthropic-version": ANTHROPIC_VERSION}
# Where a message holds the answer, thinking, tool calls, usage and id (JSONPath).
RESPONSE_MAPPING: dict[str, str | list[str]] = {
    "final_answer": '$.content[?(@.type=="text")].text',
    "thinking": '$.content[?(@.type=="thinking")].thinking',
    "tool_calls": '$.content[?(@.type=="tool_use")]',
    "tokens.input": "$.usage.input_tokens",
    "tokens.output": "$.usage.output_tokens",
    "tokens.thinking": "$.usage.thinking_tokens",
    "trace_id": "$.id",
}


class AnthropicBackend(JudgeBackend):
    """``POST {base_url}/v1/messages``; the verdict schema is stated in the system prompt.

    Base URL and key come from ``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` (the base URL
    is the host, as for the SDK) unless the evaluator config names others.
    """

    name: ClassVar[str] = "anthropic"
    base_url_env: ClassVar[str] = "ANTHROPIC_BASE_URL"
    api_key_env: ClassVar[str] = "ANTHROPIC_API_KEY"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    model_patterns: ClassVar[tuple[str, ...]] = ("claude-*",)
    providers: ClassVar[tuple[str, ...]] = ("anthropic",)

    def request(self, system: str, user: str, json_schema: dict[str, Any] | None) -> tuple[str, dict[str, str], dict[str, Any]]:
        headers = {"content-type": "application/json", **HEADERS}
        if self.settings.api_key:
            headers["x-api-key"] = self.settings.api_key
        body = {
            "model": self.settings.model,
            "max_tokens": self.settings.max_tokens,
            "temperature": self.settings.temperature,
            "system": system if json_schema is None else (
                f"{system}\n\nAnswer with one JSON object, no prose around it, matching this JSON Schema:\n"
                f"{json.dumps(json_schema, sort_keys=True)}"),
            "messages": [{"role": "user", "content": user}],
        }
        return f"{self.settings.base_url}/v1/messages", headers, body

    def parse(self, body: Any) -> JudgeReply:
        text = "".join(block["text"] for block in body["content"] if block.get("type") == "text")
        usage = body.get("usage") or {}
        return JudgeReply(text=text, tokens_in=usage.get("input_tokens"), tokens_out=usage.get("output_tokens"),
                          model=body.get("model") or self.settings.model)
