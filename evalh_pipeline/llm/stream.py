"""A streamed chat reply: its timing (first and last token, chunks, tokens per second) and
whether it completed. Each protocol folds its events back into its non-streamed response
shape (openai_chat.ChatStream, anthropic_messages.AnthropicStream), so the mapping of a
whole response applies unchanged; the ``http`` system reads the events off the wire."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

# Without a reported output token count, tokens_per_second estimates tokens as chars / 4.
CHARS_PER_TOKEN_ESTIMATE = 4


@dataclass
class Stream(ABC):
    """Timing and completion shared by every stream kind."""

    started: float
    chunks: int = 0
    done: bool = False
    first_token: float | None = None
    last_token: float | None = None

    def token(self, now: float) -> None:
        """A non-empty delta arrived."""
        self.first_token = self.first_token or now
        self.last_token = now

    @abstractmethod
    def feed(self, event: Any, now: float) -> None:  # pragma: no cover - overridden
        ...

    def finished_normally(self) -> None:
        """The body ended without a transport error (and without a done marker)."""

    def text_chars(self) -> int:
        return 0

    @abstractmethod
    def as_response(self) -> dict[str, Any]:  # pragma: no cover - overridden
        ...

    def metrics(self, token_output: int | None) -> dict[str, Any]:
        """The streaming metrics; tokens_per_second = output tokens / (last - first token).

        Output tokens are the reported count when there is one, else an estimate of
        ``ceil(chars of answer + thinking / 4)``; ``custom.tokens_per_second_basis`` says which.
        """
        def ms(at: float | None) -> int | None:
            return None if at is None else round((at - self.started) * 1000)

        basis = "reported_output_tokens"
        tokens = token_output
        if not tokens:
            chars = self.text_chars()
            tokens = math.ceil(chars / CHARS_PER_TOKEN_ESTIMATE) if chars else None
            basis = "estimated_chars_div_4"
        rate = None
        if tokens and self.first_token is not None and self.last_token is not None:
            span = self.last_token - self.first_token
            if span > 0:
                rate = round(tokens / span, 3)
        return {
            "latency_first_token_ms": ms(self.first_token),
            "latency_last_token_ms": ms(self.last_token),
            "stream_chunks": self.chunks,
            "tokens_per_second": rate,
            "stream_completed": self.done,
            "custom": {"tokens_per_second_basis": basis} if rate is not None else {},
        }
