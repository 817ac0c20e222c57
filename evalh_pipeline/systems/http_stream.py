"""Streaming for the ``http`` adapter: server-sent events, JSON lines and raw text chunks.

Provider streams (``openai_chat``/``deepseek`` chat completion chunks, ``anthropic_messages``
events: their folds are llm/'s, with the protocols; ``gemini`` GenerateContentResponse
chunks) are folded back into the provider's non-streamed response shape, so the preset's
``response_mapping`` applies unchanged.
Streams without a provider are read through ``stream_mapping`` (JSONPath per event) into a
plain ``{final_answer, thinking, tool_calls, tokens, trace_id}`` document. Every stream is
timed for the streaming metrics; a stream that ends without its done marker, or whose
connection breaks, keeps what arrived and has ``stream_completed`` false.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from evalh_pipeline.errors import CellError
from evalh_pipeline.common.http_client import HttpError, LineSplitter, Response
from evalh_pipeline.llm.anthropic_messages import AnthropicStream
from evalh_pipeline.llm.openai_chat import ChatStream
from evalh_pipeline.llm.stream import Stream
from evalh_pipeline.systems.http_paths import JsonPath, find_first

STREAM_FORMATS = ("sse", "json_lines", "raw_chunks")
# Providers with a streaming preset; all of them speak server-sent events.
STREAMING_PROVIDERS = ("openai_chat", "deepseek", "anthropic_messages", "gemini")
STREAM_MAPPING_KEYS = (
    "delta", "thinking_delta", "done", "tool_call", "tokens.input", "tokens.output", "tokens.thinking", "trace_id",
)
# After the done marker, how long the rest of the body may take to end. A body read to its end
# leaves the connection reusable; one cut short is closed, and the next request pays a new
# TCP (and TLS) handshake. Servers end the body right after the marker; one that holds it
# open past this is cut, and the stream still counts as completed.
DRAIN_SECONDS = 1.0


class StreamTooLarge(CellError):
    pass


@dataclass
class GeminiStream(Stream):
    """Gemini ``streamGenerateContent?alt=sse``: GenerateContentResponse chunks whose parts are
    appended (``thought`` parts stay thinking); a ``finishReason`` marks the end."""

    texts: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    usage: tuple[str, dict[str, Any]] | None = None
    response_id: tuple[str, Any] | None = None

    def feed(self, event: Any, now: float) -> None:
        if not isinstance(event, dict):
            return
        self.chunks += 1
        for key in ("usage_metadata", "usageMetadata"):
            if isinstance(event.get(key), dict):
                self.usage = (key, event[key])
        for key in ("response_id", "responseId"):
            if event.get(key) is not None:
                self.response_id = (key, event[key])
        candidates = event.get("candidates") or []
        first = candidates[0] if candidates and isinstance(candidates[0], dict) else {}
        for part in (first.get("content") or {}).get("parts") or []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("functionCall"), dict):
                self.calls.append({"functionCall": part["functionCall"]})
                self.token(now)
            elif isinstance(part.get("text"), str) and part["text"]:
                (self.thoughts if part.get("thought") is True else self.texts).append(part["text"])
                self.token(now)
        if first.get("finishReason") or first.get("finish_reason"):
            self.done = True

    def text_chars(self) -> int:
        return sum(map(len, self.texts)) + sum(map(len, self.thoughts))

    def as_response(self) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if self.thoughts:
            parts.append({"text": "".join(self.thoughts), "thought": True})
        if self.texts:
            parts.append({"text": "".join(self.texts)})
        parts.extend(self.calls)
        data: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": parts}}]}
        if self.usage is not None:
            data[self.usage[0]] = self.usage[1]
        if self.response_id is not None:
            data[self.response_id[0]] = self.response_id[1]
        return data


@dataclass
class MappedStream(Stream):
    """A stream without a provider: each event (a JSON value) is read through ``stream_mapping``.

    ``delta`` / ``thinking_delta`` are appended; a truthy ``done`` ends the stream (SSE also
    ends at ``[DONE]``); ``tool_call`` fragments (``{index?, id?, name?, arguments?}`` or the
    OpenAI ``{index, id, function: {name, arguments}}`` shape) are assembled: string
    arguments are concatenated, a fragment with the same ``index`` (else ``id``) continues a
    call, a fragment without either continues the last call unless it names a new one.
    ``tokens.*`` and ``trace_id``: the last event where the path matches wins.
    """

    paths: dict[str, list[JsonPath]] = field(default_factory=dict)
    complete_at_end: bool = False  # no done marker configured: a normal end completes the stream
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    found: dict[str, Any] = field(default_factory=dict)

    def feed(self, event: Any, now: float) -> None:
        self.chunks += 1
        got = False
        for key, sink in (("delta", self.content), ("thinking_delta", self.reasoning)):
            for value in find_first(self.paths.get(key, []), event) or []:
                if value is not None and value != "":
                    sink.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
                    got = True
        for fragment in find_first(self.paths.get("tool_call", []), event) or []:
            for item in fragment if isinstance(fragment, list) else [fragment]:
                if isinstance(item, dict):
                    self._call_fragment(item)
                    got = True
        if got:
            self.token(now)
        for key in ("tokens.input", "tokens.output", "tokens.thinking", "trace_id"):
            values = find_first(self.paths.get(key, []), event)
            if values:
                self.found[key] = values[0]
        done = find_first(self.paths.get("done", []), event)
        if done and any(bool(v) for v in done):
            self.done = True

    def _call_fragment(self, item: dict[str, Any]) -> None:
        function = item.get("function")
        fn: dict[str, Any] = function if isinstance(function, dict) else item
        name, args = fn.get("name"), fn.get("arguments", fn.get("args", fn.get("input")))
        slot = None
        if item.get("index") is not None:
            slot = next((c for c in self.calls if c["index"] == item["index"]), None)
        elif item.get("id") is not None:
            slot = next((c for c in self.calls if c["id"] == item["id"]), None)
        elif self.calls and not (name and self.calls[-1]["name"]):
            slot = self.calls[-1]
        if slot is None:
            slot = {"index": item.get("index"), "id": None, "name": "", "arguments": None}
            self.calls.append(slot)
        slot["id"] = item.get("id") or slot["id"]
        if isinstance(name, str):
            slot["name"] += name
        if isinstance(args, str):
            slot["arguments"] = (slot["arguments"] if isinstance(slot["arguments"], str) else "") + args
        elif isinstance(args, dict):
            slot["arguments"] = {**(slot["arguments"] if isinstance(slot["arguments"], dict) else {}), **args}

    def finished_normally(self) -> None:
        if self.complete_at_end:
            self.done = True

    def text_chars(self) -> int:
        return sum(map(len, self.content)) + sum(map(len, self.reasoning))

    def as_response(self) -> dict[str, Any]:
        return {
            "final_answer": "".join(self.content) if self.content else None,
            "thinking": "".join(self.reasoning) if self.reasoning else None,
            # A fragment that never got a name (a cut stream) is dropped rather than failing the cell.
            "tool_calls": [{"id": c["id"], "name": c["name"], "arguments": c["arguments"]}
                           for c in self.calls if c["name"]],
            "tokens": {k.split(".")[1]: self.found.get(k) for k in ("tokens.input", "tokens.output", "tokens.thinking")},
            "trace_id": self.found.get("trace_id"),
        }


@dataclass
class RawStream(Stream):
    """``raw_chunks``: plain text appended to the answer; complete when the body ends normally."""

    content: list[str] = field(default_factory=list)

    def feed(self, event: Any, now: float) -> None:
        self.chunks += 1
        if isinstance(event, str) and event:
            self.content.append(event)
            self.token(now)

    def finished_normally(self) -> None:
        self.done = True

    def text_chars(self) -> int:
        return sum(map(len, self.content))

    def as_response(self) -> dict[str, Any]:
        return {"final_answer": "".join(self.content) if self.content else None, "thinking": None,
                "tool_calls": [], "tokens": {}, "trace_id": None}


STREAM_PRESETS: dict[str, type[Stream]] = {
    "openai_chat": ChatStream,
    "deepseek": ChatStream,
    "anthropic_messages": AnthropicStream,
    "gemini": GeminiStream,
}


async def read_sse(resp: Response, stream: Stream, cap: int) -> None:
    """Feed ``data:`` events to ``stream`` until ``[DONE]``, its done marker or the end of the body.

    A body that ends (or breaks) before then leaves ``stream.done`` false (unless the stream
    completes at a normal end); more than ``cap`` bytes raises :class:`StreamTooLarge`.
    Lines end at LF, CRLF or CR (the SSE grammar); each is decoded by the body's charset.
    """
    encoding = resp.encoding
    data_lines: list[str] = []

    def dispatch() -> bool:
        payload = data_lines[0] if len(data_lines) == 1 else "\n".join(data_lines)
        data_lines.clear()
        if payload.strip() == "[DONE]":
            stream.done = True
            return True
        try:
            event = json.loads(payload)
        except ValueError:
            return False  # a malformed event is skipped, not fatal
        stream.feed(event, time.monotonic())
        return stream.done

    def lines_done(lines: list[bytes]) -> bool:
        """Feed ``lines``; True once the stream is complete."""
        for line in lines:
            if line.startswith(b"data:"):
                text = line[5:].decode(encoding, errors="replace")
                data_lines.append(text[1:] if text.startswith(" ") else text)
            elif data_lines and not line.strip() and dispatch():
                return True
            # other lines: comments and event:/id:/retry: fields
        return False

    ended = await _feed_lines(resp.iter_bytes(), cap, lines_done)
    if ended is False and not (data_lines and dispatch()):  # a last event without its blank line
        stream.finished_normally()


async def read_json_lines(resp: Response, stream: Stream, cap: int) -> None:
    """One JSON value per line (blank and malformed lines are skipped), same ending rules as SSE."""
    encoding = resp.encoding

    def lines_done(lines: list[bytes]) -> bool:
        for line in lines:
            if not line.strip():
                continue
            try:
                event = json.loads(line.decode(encoding, errors="replace"))
            except ValueError:
                continue
            stream.feed(event, time.monotonic())
            if stream.done:
                return True
        return False

    if await _feed_lines(resp.iter_bytes(), cap, lines_done) is False:
        stream.finished_normally()


async def _feed_lines(chunks: AsyncIterator[bytes], cap: int, lines_done: Callable[[list[bytes]], bool]) -> bool | None:
    """Split the body into lines and hand them to ``lines_done`` until it says the stream is
    complete (the rest of the body is then drained); more than ``cap`` bytes raises
    :class:`StreamTooLarge`.

    Returns True when ``lines_done`` completed the stream (the body's last line included),
    False when the body ended first, None when the connection broke: what arrived is kept and
    the stream stays incomplete.
    """
    size = 0
    splitter = LineSplitter()
    try:
        async for chunk in chunks:
            size += len(chunk)
            if size > cap:
                raise StreamTooLarge()
            if lines_done(splitter.feed(chunk)):
                await _drain(chunks, cap - size)
                return True
    except HttpError:
        return None
    return lines_done(splitter.end())


async def _drain(chunks: AsyncIterator[bytes], budget: int) -> None:
    """Read what follows the done marker to the body's end (see DRAIN_SECONDS), ignoring it.

    Whatever happens here (a body that never ends, more than ``budget`` bytes, a broken
    connection) the stream is already complete: the response is then closed, and the
    connection with it.
    """
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            async for chunk in chunks:
                budget -= len(chunk)
                if budget < 0:
                    return
    except (TimeoutError, HttpError):
        return


async def read_raw_chunks(resp: Response, stream: Stream, cap: int) -> None:
    """Each decoded piece of the body as it arrives is a chunk; a normal end completes it."""
    size = 0
    try:
        async for text in resp.iter_text():
            size += len(text.encode())
            if size > cap:
                raise StreamTooLarge()
            stream.feed(text, time.monotonic())
    except HttpError:
        return
    stream.finished_normally()


READERS = {"sse": read_sse, "json_lines": read_json_lines, "raw_chunks": read_raw_chunks}
