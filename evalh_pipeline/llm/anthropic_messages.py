"""The Anthropic messages protocol over plain HTTP (no SDK): the judge backend, the version
header, where a response holds the answer and usage, and a streamed reply folded back into
one (the ``http`` system's ``anthropic_messages`` preset maps and streams it)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evalh_pipeline.llm.chat import JudgeBackend, JudgeReply
from evalh_pipeline.llm.stream import Stream

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


@dataclass
class AnthropicStream(Stream):
    """Anthropic Messages events: message_start, content_block_start/delta/stop (text_delta,
    thinking_delta, input_json_delta), message_delta (usage), message_stop (done)."""

    id: str | None = None
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)

    def feed(self, event: Any, now: float) -> None:
        if not isinstance(event, dict):
            return
        self.chunks += 1
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.id = message.get("id") or self.id
            self.usage.update({k: v for k, v in (message.get("usage") or {}).items() if v is not None})
        elif kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            if block.get("type") == "tool_use":
                block["_json"] = ""
            self.blocks[int(event.get("index", len(self.blocks)))] = block
        elif kind == "content_block_delta":
            index = int(event.get("index", max(self.blocks, default=0)))
            delta = event.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                block, key, piece = self._block(index, "text"), "text", delta.get("text")
            elif dtype == "thinking_delta":
                block, key, piece = self._block(index, "thinking"), "thinking", delta.get("thinking")
            elif dtype == "input_json_delta":
                block, key, piece = self._block(index, "tool_use"), "_json", delta.get("partial_json")
            else:  # signature_delta and future kinds carry no text
                return
            if isinstance(piece, str) and piece:
                block[key] = (block.get(key) or "") + piece
                self.token(now)
        elif kind == "message_delta":
            self.usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            self.done = True

    def _block(self, index: int, kind: str) -> dict[str, Any]:
        return self.blocks.setdefault(index, {"type": kind, **({"_json": ""} if kind == "tool_use" else {})})

    def text_chars(self) -> int:
        return sum(len(b.get("text") or "") + len(b.get("thinking") or "") for b in self.blocks.values())

    def as_response(self) -> dict[str, Any]:
        content = []
        for index in sorted(self.blocks):
            block = dict(self.blocks[index])
            if block.get("type") == "tool_use":
                raw = block.pop("_json", "")
                if raw:
                    try:
                        block["input"] = json.loads(raw)
                    except ValueError:  # a cut-off tool call: keep the fragment
                        block["input"] = {"_raw": raw}
            content.append(block)
        return {"id": self.id, "content": content, "usage": self.usage}
