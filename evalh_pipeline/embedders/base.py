"""The Embedder contract: ``await embed(texts)`` -> one vector per text, in order."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

from evalh_pipeline.common.configured import Configured
from evalh_pipeline.common.ratelimits import RateLimits
from evalh_pipeline.errors import InfrastructureError


class EmbedderConfigModel(BaseModel):
    """Base of embedder option models: unknown keys are errors, caught when the eval loads."""

    model_config = ConfigDict(extra="forbid")


EmbedderConfigT = TypeVar("EmbedderConfigT", bound=EmbedderConfigModel, default=EmbedderConfigModel, covariant=True)


class EmbedderError(InfrastructureError, RuntimeError):
    """An embedder could not embed: transport failure, HTTP status, malformed answer."""


class EmbedderRateLimited(EmbedderError):
    """The embeddings server still answered with rate limits when the call's time ran out (or
    the run gave up on the limit): the result errors ``rate_limited``, as a judge's does."""

    error_type = "rate_limited"  # the result's error.type (models/result.py NOT_JUDGED_ERRORS)


class Embedder(Configured[EmbedderConfigT], ABC):
    """Maps texts to vectors. Subclasses name their config model as the parameter
    (``class Mine(Embedder[MineConfig])``) and implement :meth:`_embed`.

    ``env`` is read at construction only (keys, base URLs). ``rate_limits``: the run's limits
    (shared with its systems and judges), for an embedder that calls a server; None: its own.
    Vectors of texts already seen
    are kept in a small in-process LRU: re-evaluation embeds the same references for every
    variant and sample, and an embedder is deterministic for a given model.
    """

    Config: ClassVar[type[EmbedderConfigModel]]  # set from the generic parameter (common/configured.py)
    cache_size: ClassVar[int] = 4096

    def __init__(self, type_name: str, config: Mapping[str, Any] | None = None,
                 env: Mapping[str, str] | None = None, rate_limits: RateLimits | None = None) -> None:
        self.type_name = type_name
        self.config = self._validated_config(dict(config or {}))
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        self.rate_limits = rate_limits or RateLimits()
        self._cache: OrderedDict[str, list[float]] = OrderedDict()

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why this embedder cannot run in this environment (a missing extra), or None."""
        return None

    @property
    def model(self) -> str:
        """The model name recorded in verdict details."""
        return self.type_name

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in the order given; raises :class:`EmbedderError`."""
        found: dict[str, list[float]] = {}
        for text in texts:
            if text in self._cache:
                self._cache.move_to_end(text)
                found[text] = self._cache[text]
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            vectors = await self._embed(missing)
            if len(vectors) != len(missing):
                raise EmbedderError(f"{self.type_name}: asked for {len(missing)} embeddings, got {len(vectors)}")
            for text, vector in zip(missing, vectors):
                found[text] = vector
                self._cache[text] = vector
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return [found[text] for text in texts]

    @abstractmethod
    async def _embed(self, texts: list[str]) -> list[list[float]]:
        ...
