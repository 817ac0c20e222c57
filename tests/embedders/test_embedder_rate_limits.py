"""The openai_compatible embedder meets rate limits as systems and judges do: through the
run's limiter of its host and key (or its pool), waiting out a 429 and its Retry-After, and
erroring `rate_limited` when the server never lets it through. Against the rate-limited
loopback server (tests/support/rate_limited_server.py), which counts what it refused."""

from __future__ import annotations

import asyncio

import pytest

from evalh_pipeline.common.context import EvaluatorContext
from evalh_pipeline.common.ratelimits import PoolLimits, RateLimits, RateLimitSettings
from evalh_pipeline.embedders import EmbedderRateLimited, build_embedder
from evalh_pipeline.evaluators.semantic_similarity import SemanticSimilarity
from evalh_pipeline.models import EvalCase, Trace
from evalh_pipeline.runner.result_lines import raised
from tests.support.rate_limited_server import KeyLimit, RateLimitedServer

pytestmark = pytest.mark.integration

KEY = "sk-embed-secret-9999"
CASE = EvalCase(id="c1", input={"q": "capital"})
TRACE = Trace.model_validate({"run_id": "r", "case_id": "c1", "variant_name": "v", "started_at": "2026-01-01T00:00:00Z",
                              "finished_at": "2026-01-01T00:00:01Z", "latency_ms": 1000,
                              "output": {"final_answer": "Paris"}})


def _base_url(server: RateLimitedServer) -> str:
    return f"http://127.0.0.1:{server.port}/v1"


def _vector(text: str) -> list[float]:
    return [float(len(text)), float(sum(c in "aeiou" for c in text))]


def test_an_embedder_waits_out_the_429s_of_its_key_and_gets_every_vector():
    # Four requests a second with a burst of one, six embeddings asked at once: the server refuses some.
    with RateLimitedServer({f"Bearer {KEY}": KeyLimit(rate=4, burst=1)}) as server:
        limits = RateLimits(max_concurrency=8)
        embedder = build_embedder({"name": "openai_compatible", "base_url": _base_url(server), "batch_size": 1},
                                  env={"OPENAI_API_KEY": KEY}, rate_limits=limits)

        async def go() -> list[list[list[float]]]:
            return await asyncio.gather(*(embedder.embed([f"text {n}"]) for n in range(6)))

        vectors = asyncio.run(go())
    assert vectors == [[_vector(f"text {n}")] for n in range(6)]
    refused = server.stats[f"Bearer {KEY}"].rate_limited
    [limiter] = limits.limiters.values()
    assert refused >= 1 and limiter.stats.rate_limited == refused and limiter.stats.succeeded == 6


def test_an_embedder_the_server_never_lets_through_errors_rate_limited_with_the_key_masked():
    with RateLimitedServer({f"Bearer {KEY}": KeyLimit(rate=0, burst=0)}) as server:
        evaluator = SemanticSimilarity("similar", "semantic_similarity", {
            "field": "output.final_answer", "reference_text": "Paris", "threshold": 0.5,
            "embedder": {"name": "openai_compatible", "base_url": _base_url(server), "timeout_seconds": 2.5}},
            EvaluatorContext(env={"OPENAI_API_KEY": KEY}))
        with pytest.raises(EmbedderRateLimited) as info:
            asyncio.run(evaluator.evaluate(CASE, TRACE, None))
    _, error = raised(evaluator, info.value)
    assert error.type == "rate_limited"
    assert "HTTP 429" in error.message and "rate limited" in error.message and KEY not in error.message
    assert server.total.requests >= 2  # it waited and tried again before giving up


def test_an_embedder_naming_a_pool_shares_it_with_the_run_and_keeps_under_its_limit():
    limits = RateLimits(pools={"vectors": PoolLimits(max_concurrency=1)}, max_concurrency=8,
                        settings=RateLimitSettings())
    with RateLimitedServer(latency=0.05) as server:
        evaluator = SemanticSimilarity("similar", "semantic_similarity", {
            "field": "output.final_answer", "reference_text": "Paris", "threshold": 0.5,
            "embedder": {"name": "openai_compatible", "base_url": _base_url(server), "pool": "vectors",
                         "batch_size": 1}}, EvaluatorContext(env={}, rate_limits=limits))

        async def go() -> list[list[list[float]]]:
            return await asyncio.gather(*(evaluator.embedder.embed([f"t{n}"]) for n in range(5)))

        asyncio.run(go())
    assert evaluator.embedder._limiter is limits.pool("vectors")
    assert server.total.answered == 5 and server.total.peak_in_flight == 1
