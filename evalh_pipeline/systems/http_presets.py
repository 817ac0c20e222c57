"""``provider`` presets of the ``http`` adapter: the request each provider expects and the
JSONPath mapping of its response (DataModel.md, "Provider mapping cheat-sheet"; the OpenAI
chat and Anthropic messages protocols' own in llm/).

A preset builds the request body from the case (plus ``model`` and the other request fields
of the variant), names the default ``response_mapping`` and may post-process the mapped
response (DeepSeek's inline ``<think>`` blocks). Thinking is never folded into the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalh_pipeline.llm import anthropic_messages, openai_chat
from evalh_pipeline.models import TraceOutput

_MISSING = object()


def _chat_messages(case: dict[str, Any]) -> list[Any] | None:
    """OpenAI/Anthropic-style messages from ``case.input.messages`` or ``case.input.user_message``."""
    data = case.get("input") or {}
    if isinstance(data.get("messages"), list):
        messages: list[Any] = data["messages"]
        return messages
    if data.get("user_message") is not None:
        return [{"role": "user", "content": data["user_message"]}]
    return None


def _openai_request(case: dict[str, Any]) -> dict[str, Any]:
    messages = _chat_messages(case)
    system = (case.get("input") or {}).get("system")
    if messages is not None and system is not None and "messages" not in (case.get("input") or {}):
        messages = [{"role": "system", "content": system}, *messages]
    return {} if messages is None else {"messages": messages}


def _anthropic_request(case: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"max_tokens": 1024}
    messages = _chat_messages(case)
    if messages is not None:
        body["messages"] = messages
    system = (case.get("input") or {}).get("system")
    if system is not None:
        body["system"] = system
    return body


def _gemini_request(case: dict[str, Any]) -> dict[str, Any]:
    data = case.get("input") or {}
    if isinstance(data.get("contents"), list):
        return {"contents": data["contents"]}
    body: dict[str, Any] = {}
    if isinstance(data.get("messages"), list):
        body["contents"] = [
            {"role": "model" if m.get("role") == "assistant" else "user", "parts": [{"text": m.get("content")}]}
            for m in data["messages"] if isinstance(m, dict) and m.get("role") != "system"
        ]
    elif data.get("user_message") is not None:
        body["contents"] = [{"role": "user", "parts": [{"text": data["user_message"]}]}]
    if data.get("system") is not None:
        body["system_instruction"] = {"parts": [{"text": data["system"]}]}
    return body


def _simple_request(case: dict[str, Any]) -> dict[str, Any]:
    # eval-harness's `simple` and `langserve_invoke`: {"input": <case input>} -> $.output
    return {"input": case.get("input") or {}}


_THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL)


def split_think_blocks(text: str | None) -> tuple[str | None, str | None]:
    """(answer, thinking) of a DeepSeek-R1 style answer with inline ``<think>...</think>`` blocks.

    An unclosed ``<think>`` (a cut-off answer) is thinking to the end; a lone ``</think>``
    (servers that drop the opening tag) closes thinking that started at the beginning.
    """
    if not text or ("<think>" not in text and "</think>" not in text):
        return text, None
    thoughts = [m.strip() for m in _THINK_BLOCK.findall(text)]
    rest = _THINK_BLOCK.sub("", text)
    if "<think>" in rest:
        rest, _, tail = rest.partition("<think>")
        thoughts.append(tail.strip())
    if "</think>" in rest:
        head, _, rest = rest.partition("</think>")
        thoughts.insert(0, head.strip())
    thinking = "\n\n".join(t for t in thoughts if t)
    return rest.strip(), thinking or None


def _deepseek_post(output: TraceOutput) -> None:
    answer, inline = split_think_blocks(output.final_answer)
    output.final_answer = answer
    if inline:
        # reasoning_content (deepseek-reasoner) and inline blocks are both thinking; keep both.
        output.thinking = f"{output.thinking}\n\n{inline}" if output.thinking else inline


@dataclass(frozen=True)
class Preset:
    name: str
    request: Callable[[dict[str, Any]], dict[str, Any]]
    response_mapping: dict[str, str | list[str]]
    # Whether `model` goes into the body (Gemini names the model in the endpoint instead).
    model_in_body: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    # Body keys the request must end up with (after merging `body` and `request_template`).
    required_body: tuple[str, ...] = ()
    post: Callable[[TraceOutput], None] | None = None


PRESETS: dict[str, Preset] = {
    "simple": Preset(
        name="simple",
        request=_simple_request,
        response_mapping={"final_answer": "$.output"},
    ),
    "langserve_invoke": Preset(
        name="langserve_invoke",
        request=_simple_request,
        response_mapping={"final_answer": "$.output"},
    ),
    "openai_chat": Preset(
        name="openai_chat",
        request=_openai_request,
        response_mapping=openai_chat.RESPONSE_MAPPING,
        required_body=("messages",),
    ),
    "anthropic_messages": Preset(
        name="anthropic_messages",
        request=_anthropic_request,
        response_mapping=anthropic_messages.RESPONSE_MAPPING,
        headers=anthropic_messages.HEADERS,
        required_body=("messages",),
    ),
    "gemini": Preset(
        name="gemini",
        request=_gemini_request,
        response_mapping={
            "final_answer": "$.candidates[0].content.parts[?(!@.thought)].text",
            "thinking": "$.candidates[0].content.parts[?(@.thought==true)].text",
            "tool_calls": "$.candidates[0].content.parts[*].functionCall",
            # The SDKs' snake_case first, then the REST API's camelCase.
            "tokens.input": ["$.usage_metadata.prompt_token_count", "$.usageMetadata.promptTokenCount"],
            "tokens.output": ["$.usage_metadata.candidates_token_count", "$.usageMetadata.candidatesTokenCount"],
            "tokens.thinking": ["$.usage_metadata.thoughts_token_count", "$.usageMetadata.thoughtsTokenCount"],
            "trace_id": ["$.response_id", "$.responseId"],
        },
        model_in_body=False,
        required_body=("contents",),
    ),
    "deepseek": Preset(
        name="deepseek",
        request=_openai_request,
        response_mapping={**openai_chat.RESPONSE_MAPPING, "thinking": "$.choices[0].message.reasoning_content"},
        required_body=("messages",),
        post=_deepseek_post,
    ),
}
