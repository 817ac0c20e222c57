"""``hashing``: character n-gram feature hashing. Offline, dependency-free, deterministic.

This is a LEXICAL similarity, not a semantic one: "car" and "automobile" share no
n-grams and score near 0, while a reworded sentence that reuses the same words scores
high. It is the default because it always works (no extra, no network, no model file);
use ``wordllama`` (the ``[embeddings]`` extra) or ``openai_compatible`` for meaning.
"""

from __future__ import annotations

import re
import zlib

from pydantic import Field, model_validator

from evalh_pipeline.embedders.base import Embedder, EmbedderConfigModel

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingConfig(EmbedderConfigModel):
    # At most 2**20 so the bucket and the sign (bit 31) come from different bits of the hash.
    dim: int = Field(default=1024, ge=16, le=1 << 20)
    ngram_min: int = Field(default=3, ge=1, le=10)
    ngram_max: int = Field(default=5, ge=1, le=10)
    lowercase: bool = True

    @model_validator(mode="after")
    def _ordered(self) -> HashingConfig:
        if self.ngram_min > self.ngram_max:
            raise ValueError(f"ngram_min ({self.ngram_min}) must be <= ngram_max ({self.ngram_max})")
        return self


class HashingEmbedder(Embedder[HashingConfig]):
    """Counts each word and each character n-gram of each word (padded with spaces, as
    fastText does) into ``dim`` signed buckets chosen by a stable hash (crc32)."""

    @property
    def model(self) -> str:
        c = self.config
        return f"char{c.ngram_min}-{c.ngram_max}gram-hash{c.dim}"

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> list[float]:
        c = self.config
        vector = [0.0] * c.dim
        for word in _WORD.findall(text.lower() if c.lowercase else text):
            padded = f" {word} "
            features = [f"w:{word}"]
            for n in range(c.ngram_min, c.ngram_max + 1):
                features.extend(padded[i:i + n] for i in range(len(padded) - n + 1))
            for feature in features:
                # crc32: stable across processes (unlike hash()) and 5x faster than blake2b here.
                digest = zlib.crc32(feature.encode())
                # The top bit picks the sign so that collisions cancel out on average.
                vector[digest % c.dim] += -1.0 if digest >> 31 else 1.0
        return vector
