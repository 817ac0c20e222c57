"""Server-sent events for the ``http`` adapter: OpenAI-style chat completion chunks.

The chunks are folded back into the non-streamed response shape (so the preset's
``response_mapping`` applies unchanged) and timed for the streaming metrics.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

STREAMING_PROVIDERS = ("openai_chat", "deepseek")


class StreamTooLarge(Exception):
    pass


@dataclass
class ChatStream:
    """Accumulates ``chat.completion.chunk`` events."""

    started: float
    chunks: int = 0
    done: bool = False
    first_token: float | None = None
    last_token: float | None = None
    id: str | None = None
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    usage: dict[str, Any] | None = None

    def feed(self, event: dict[str, Any], now: float) -> None:
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
                self.first_token = self.first_token or now
                self.last_token = now

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

    def metrics(self, token_output: int | None) -> dict[str, Any]:
        def ms(at: float | None) -> int | None:
            return None if at is None else round((at - self.started) * 1000)

        rate = None
        if token_output and self.first_token is not None and self.last_token is not None:
            span = self.last_token - self.first_token
            if span > 0:
                rate = round(token_output / span, 3)
        return {
            "latency_first_token_ms": ms(self.first_token),
            "latency_last_token_ms": ms(self.last_token),
            "stream_chunks": self.chunks,
            "tokens_per_second": rate,
            "stream_completed": self.done,
        }


async def read_sse(resp: httpx.Response, stream: ChatStream, cap: int) -> None:
    """Feed ``data:`` events to ``stream`` until ``[DONE]`` or the end of the body.

    A body that ends (or breaks) before ``[DONE]`` leaves ``stream.done`` false; more than
    ``cap`` bytes raises :class:`StreamTooLarge`.
    """
    size = 0
    data_lines: list[str] = []

    def dispatch() -> bool:
        payload = "\n".join(data_lines)
        data_lines.clear()
        if payload.strip() == "[DONE]":
            stream.done = True
            return True
        try:
            event = json.loads(payload)
        except ValueError:
            return False  # a malformed event is skipped, not fatal
        if isinstance(event, dict):
            stream.feed(event, time.monotonic())
        return False

    try:
        async for line in resp.aiter_lines():
            size += len(line) + 1
            if size > cap:
                raise StreamTooLarge()
            if line.startswith("data:"):
                data_lines.append(line[5:].removeprefix(" "))
            elif not line.strip() and data_lines and dispatch():
                return
            # other lines: comments and event:/id:/retry: fields
    except httpx.HTTPError:
        return  # cut off: what arrived is kept, stream_completed stays false
    if data_lines:
        dispatch()  # a last event without its blank line
