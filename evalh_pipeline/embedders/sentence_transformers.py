"""``sentence_transformers``: eval-harness's local embedder (``sentence-transformers/<model>``).

Needs the optional extra ``pip install 'evalh-pipeline[embeddings_local]'`` (the
sentence-transformers package, with torch) and the model in the local Hugging Face cache
or downloadable. Without the package an eval that names it still loads: the loader warns
and its results are errors with the same message (as in eval-harness).
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from functools import lru_cache
from typing import Any

from evalh_pipeline.embedders.base import Embedder, EmbedderConfigModel, EmbedderError

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_load_lock = threading.Lock()


class SentenceTransformersConfig(EmbedderConfigModel):
    model: str = DEFAULT_MODEL


class SentenceTransformersEmbedder(Embedder[SentenceTransformersConfig]):
    """Embeddings of a sentence-transformers model, computed locally."""

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if importlib.util.find_spec("sentence_transformers") is None:
            return ("the sentence-transformers package is not installed (pip install "
                    "'evalh-pipeline[embeddings_local]'; or use embedder wordllama, local and lighter, "
                    "from the embeddings extra)")
        return None

    @property
    def model(self) -> str:
        return self.config.model

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._embed_sync, texts)

    def _embed_sync(self, texts: list[str]) -> list[list[float]]:
        try:
            vectors: Any = _load(self.config.model).encode(texts)
        except Exception as exc:  # noqa: BLE001 - surface any library or download failure as an embedder error
            raise EmbedderError(f"sentence-transformers {self.config.model}: {type(exc).__name__}: {exc}") from exc
        return [list(map(float, row)) for row in vectors]


@lru_cache(maxsize=4)
def _load(model: str) -> Any:
    with _load_lock:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(model)
