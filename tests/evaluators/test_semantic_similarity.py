"""semantic_similarity: pass / fail on the cosine, missing inputs fail, embedder failures raise."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest

from evalh_pipeline.embedders import EmbedderError
from evalh_pipeline.evaluators.base import EvaluatorContext
from evalh_pipeline.evaluators.semantic_similarity import SemanticSimilarity
from evalh_pipeline.models import EvalCase, Trace, TraceOutput
from tests.embedders.fake_embeddings_server import fake_embeddings_server

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
CASE = EvalCase(id="c1", input={"question": "capital of France?"},
                expected={"reference_answer": "The capital of France is Paris.",
                          "facts": {"city": "Paris", "empty": ""}})


def trace(answer: str | None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(final_answer=answer))


def judge(config: dict, answer: str | None, env: dict | None = None):
    evaluator = SemanticSimilarity("similar", "semantic_similarity", config, EvaluatorContext(env=env or {}))
    return asyncio.run(evaluator.evaluate(CASE, trace(answer), None))


def test_passes_when_the_answer_is_close_to_the_reference_path():
    verdict = judge({"reference_path": "expected.reference_answer", "threshold": 0.8},
                    "Paris is the capital of France.")
    assert verdict.passed and verdict.score == verdict.detail["similarity"] > 0.8
    assert verdict.detail == {"embedder": "hashing", "model": "char3-5gram-hash1024", "field": "output.final_answer",
                              "reference": "expected.reference_answer", "threshold": 0.8,
                              "similarity": verdict.score}
    assert verdict.reason == f"similarity {verdict.score:.3f} >= threshold 0.8"


def test_fails_below_threshold_with_the_similarity_as_score():
    verdict = judge({"reference_text": "Bananas are rich in potassium.", "threshold": 0.5},
                    "Paris is the capital of France.")
    assert not verdict.passed and verdict.score < 0.5
    assert verdict.reason == f"similarity {verdict.score:.3f} < threshold 0.5"


def test_reference_path_reads_facts_and_other_fields():
    assert judge({"reference_path": "expected.facts.city", "threshold": 0.99}, "paris").passed
    verdict = judge({"reference_path": "input.question", "field": "output.final_answer", "threshold": 0.9},
                    "capital of France?")
    assert verdict.passed and verdict.detail["reference"] == "input.question"


def test_missing_or_empty_answer_fails_saying_so():
    verdict = judge({"reference_text": "Paris", "threshold": 0.5}, None)
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == "output.final_answer is missing or empty: nothing to compare"
    assert verdict.detail["similarity"] is None
    assert judge({"reference_text": "Paris", "threshold": 0.5}, "   ").reason.startswith("output.final_answer is missing")


@pytest.mark.parametrize("path", ["expected.reference_answr", "expected.facts.empty"])
def test_missing_or_empty_reference_fails_saying_so(path):
    verdict = judge({"reference_path": path, "threshold": 0.5}, "Paris")
    assert not verdict.passed
    assert verdict.reason == f"reference {path} is missing or empty in case 'c1'"


def test_embedder_failure_raises_so_the_result_is_an_error():
    with fake_embeddings_server() as server:
        server.mode = "http_500"
        config = {"reference_text": "Paris", "threshold": 0.5,
                  "embedder": {"name": "openai_compatible", "model": "m", "retries": 0}}
        with pytest.raises(EmbedderError, match="HTTP 500"):
            judge(config, "Paris", env={"OPENAI_BASE_URL": server.base_url})


def test_uses_the_openai_compatible_embedder_and_reports_its_model():
    with fake_embeddings_server() as server:
        config = {"reference_text": "Paris", "threshold": 0.99,
                  "embedder": {"name": "openai_compatible", "model": "letters-26"}}
        # The fake server embeds letter counts: an anagram is identical to it.
        verdict = judge(config, "SIRAP", env={"OPENAI_BASE_URL": server.base_url})
    assert verdict.passed and verdict.score == 1.0
    assert verdict.detail["embedder"] == "openai_compatible" and verdict.detail["model"] == "letters-26"


def test_the_wordllama_embedder_judges_meaning_when_installed():
    pytest.importorskip("wordllama", reason="the optional [embeddings] extra (wordllama) is not installed")
    config = {"reference_path": "expected.reference_answer", "threshold": 0.8, "embedder": "wordllama"}
    assert judge(config, "Paris is France's capital city.").passed
    verdict = judge(config, "I don't know, maybe Berlin?")
    assert not verdict.passed and verdict.detail["model"] == "wordllama/l2_supercat-256"
