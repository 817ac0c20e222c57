"""``wordllama``: local, offline sentence embeddings from the model the ``wordllama`` wheel ships.

WordLlama ``l2_supercat`` is a static embedding model (token vectors distilled from large
language models, mean-pooled; 32k tokens x 256 dims, 16 MB of float16) - semantic enough
to score paraphrases high and unrelated answers near 0, in milliseconds on a CPU, with no
torch. Install it with the optional extra: ``pip install 'evalh-pipeline[embeddings]'``.
The weights and tokenizer are read from the installed package; nothing is downloaded
(wordllama's own ``WordLlama.load`` looks for the tokenizer in a folder its wheel does not
use and would fall back to a download, so the files are opened here directly).
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import threading
from functools import lru_cache
from typing import Any, Literal

from evalh_pipeline.embedders.base import Embedder, EmbedderConfigModel, EmbedderError

MODEL = "l2_supercat"
_WEIGHTS = f"weights/{MODEL}_256.safetensors"
_TOKENIZER = f"tokenizers/{MODEL}_tokenizer_config.json"
_load_lock = threading.Lock()


class WordLlamaConfig(EmbedderConfigModel):
    # The model is Matryoshka-trained: its first 64 or 128 dimensions are an embedding too.
    dim: Literal[64, 128, 256] = 256


class WordLlamaEmbedder(Embedder[WordLlamaConfig]):
    """Mean-pooled WordLlama ``l2_supercat`` embeddings, computed locally with numpy."""

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if importlib.util.find_spec("wordllama") is None:
            return "the wordllama package is not installed (pip install 'evalh-pipeline[embeddings]')"
        return None

    @property
    def model(self) -> str:
        return f"wordllama/{MODEL}-{self.config.dim}"

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._embed_sync, texts)

    def _embed_sync(self, texts: list[str]) -> list[list[float]]:
        try:
            model = _load(self.config.dim)
            matrix = model.embed(texts, norm=False)
        except Exception as exc:  # noqa: BLE001 - surface any library failure as an embedder error
            raise EmbedderError(f"wordllama: {type(exc).__name__}: {exc}") from exc
        # A text with no known token pools to NaN; call it the zero vector (similarity 0).
        return [[0.0 if math.isnan(x) else x for x in row] for row in matrix.tolist()]


@lru_cache(maxsize=None)
def _load_unlocked(dim: int) -> Any:
    from importlib.resources import files

    from safetensors import safe_open
    from wordllama import WordLlama
    from wordllama.inference import WordLlamaInference

    root = files("wordllama")
    weights, tokenizer_file = root / _WEIGHTS, root / _TOKENIZER
    for path in (weights, tokenizer_file):
        if not path.is_file():
            raise EmbedderError(f"wordllama: {path} is missing from the installed package; reinstall wordllama")
    tokenizer = WordLlama.load_tokenizer(tokenizer_file)
    with safe_open(str(weights), framework="np", device="cpu") as f:
        embedding = f.get_tensor("embedding.weight")[:, :dim]
    return WordLlamaInference(embedding, tokenizer, binary=False)


def _load(dim: int) -> Any:
    # One copy of the model per process and dim, however many evaluators use it.
    with _load_lock:
        return _load_unlocked(dim)
