"""wordllama embedder: the model shipped in the wheel, offline. Needs the [embeddings] extra."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys

import pytest

pytest.importorskip("wordllama", reason="the optional [embeddings] extra (wordllama) is not installed")

from evalh_pipeline.embedders import build_embedder  # noqa: E402


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / (math.hypot(*a) * math.hypot(*b))


def test_paraphrases_score_high_and_unrelated_texts_low():
    embedder = build_embedder("wordllama")
    paris, paraphrase, unrelated, synonym_a, synonym_b = asyncio.run(embedder.embed([
        "The capital of France is Paris.", "Paris is France's capital city.", "Bananas are rich in potassium.",
        "I bought a new car", "I purchased a new automobile"]))
    assert len(paris) == 256 and embedder.model == "wordllama/l2_supercat-256"
    assert cosine(paris, paraphrase) > 0.9
    assert cosine(paris, unrelated) < 0.3
    # Unlike the lexical hashing embedder, synonyms are close.
    assert cosine(synonym_a, synonym_b) > 0.7


def test_truncated_dim_and_text_without_known_tokens_is_the_zero_vector():
    vectors = asyncio.run(build_embedder({"name": "wordllama", "dim": 64}).embed(["hello", ""]))
    assert len(vectors[0]) == 64 and vectors[1] == [0.0] * 64


@pytest.mark.integration
def test_loads_with_no_network_and_an_empty_home(tmp_path):
    # Offline proof: no home cache, HF offline, and any proxy use would fail.
    env = {**os.environ, "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "HTTPS_PROXY": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    code = ("import asyncio; from evalh_pipeline.embedders import build_embedder; "
            "print(len(asyncio.run(build_embedder('wordllama').embed(['offline']))[0]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "256"
    assert list(tmp_path.iterdir()) == []
