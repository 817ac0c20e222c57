"""hashing embedder: deterministic, lexical, configurable; options checked by name."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys

import pytest

from evalh_pipeline.embedders import build_embedder, check_embedder_spec


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / (math.hypot(*a) * math.hypot(*b))


@pytest.mark.integration
def test_same_text_gives_the_same_vector_in_another_process():
    vector = asyncio.run(build_embedder("hashing").embed(["Paris is the capital"]))[0]
    code = ("import asyncio; from evalh_pipeline.embedders import build_embedder; "
            "import json; print(json.dumps(asyncio.run(build_embedder('hashing').embed(['Paris is the capital']))[0]))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123"})
    assert json.loads(other.stdout) == vector and len(vector) == 1024


def test_shared_words_score_high_and_synonyms_do_not_because_it_is_lexical():
    embedder = build_embedder({"name": "hashing", "dim": 2048})
    a, b, c, d = asyncio.run(embedder.embed(["the price is 450 dollars", "the price is 450 dollar",
                                             "car", "automobile"]))
    assert cosine(a, b) > 0.85
    assert cosine(c, d) < 0.2


def test_options_are_validated_by_name():
    with pytest.raises(ValueError, match=r"embedder 'hashing': dimz: unknown option \(allowed: name, dim, "):
        check_embedder_spec({"name": "hashing", "dimz": 3})
    with pytest.raises(ValueError, match=r"ngram_min \(6\) must be <= ngram_max \(5\)"):
        check_embedder_spec({"name": "hashing", "ngram_min": 6})
    with pytest.raises(ValueError, match=r"unknown embedder 'minilm' \(known: hashing, openai_compatible"):
        check_embedder_spec("minilm")
