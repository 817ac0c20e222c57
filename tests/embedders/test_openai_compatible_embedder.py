"""openai_compatible embedder against a real HTTP server on 127.0.0.1: shapes, keys, failures."""

from __future__ import annotations

import asyncio
import socket

import pytest

from evalh_pipeline.embedders import EmbedderError, build_embedder
from tests.embedders.fake_embeddings_server import fake_embeddings_server, letter_counts


@pytest.fixture
def server():
    with fake_embeddings_server() as running:
        yield running


def embed(embedder, texts):
    return asyncio.run(embedder.embed(texts))


def test_posts_texts_to_base_url_embeddings_with_the_key_from_env(server):
    embedder = build_embedder({"name": "openai_compatible", "model": "tiny-embed", "base_url": server.base_url},
                              env={"OPENAI_API_KEY": "sk-test"})
    assert embed(embedder, ["abc", "zz"]) == [letter_counts("abc"), letter_counts("zz")]
    (request,) = server.requests
    assert request["body"] == {"model": "tiny-embed", "input": ["abc", "zz"]}
    assert request["authorization"] == "Bearer sk-test"
    assert embedder.model == "tiny-embed"


def test_base_url_and_key_come_from_the_environment_at_construction(server):
    env = {"OPENAI_BASE_URL": server.base_url + "/", "MY_KEY": "k-1"}
    embedder = build_embedder({"name": "openai_compatible", "api_key_env": "MY_KEY"}, env=env)
    env["MY_KEY"] = "changed later"
    embed(embedder, ["a"])
    assert server.requests[0]["authorization"] == "Bearer k-1"
    assert server.requests[0]["path"] == "/v1/embeddings"


def test_no_key_sends_no_authorization_header(server):
    embedder = build_embedder({"name": "openai_compatible", "base_url": server.base_url}, env={})
    embed(embedder, ["a"])
    assert server.requests[0]["authorization"] is None


def test_batches_and_orders_answers_by_index(server):
    server.mode = "reversed"
    embedder = build_embedder({"name": "openai_compatible", "base_url": server.base_url, "batch_size": 2}, env={})
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    assert embed(embedder, texts) == [letter_counts(t) for t in texts]
    assert [r["body"]["input"] for r in server.requests] == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]


def test_repeated_texts_are_served_from_the_in_process_cache(server):
    embedder = build_embedder({"name": "openai_compatible", "base_url": server.base_url}, env={})
    embed(embedder, ["reference", "answer one"])
    embed(embedder, ["reference", "answer two", "answer two"])
    assert [r["body"]["input"] for r in server.requests] == [["reference", "answer one"], ["answer two"]]


def test_5xx_is_retried_then_raises_with_status_and_body(server):
    server.mode = "http_500"
    embedder = build_embedder({"name": "openai_compatible", "base_url": server.base_url, "retries": 1}, env={})
    with pytest.raises(EmbedderError, match="HTTP 500: .*model overloaded"):
        embed(embedder, ["a"])
    assert len(server.requests) == 2


def test_4xx_is_not_retried_and_the_key_is_masked_in_the_error(server):
    server.mode = "echo_401"
    embedder = build_embedder({"name": "openai_compatible", "base_url": server.base_url, "retries": 3},
                              env={"OPENAI_API_KEY": "sk-secret-123"})
    with pytest.raises(EmbedderError) as info:
        embed(embedder, ["a"])
    assert "HTTP 401" in str(info.value) and "bad key Bearer ***" in str(info.value)
    assert "sk-secret-123" not in str(info.value)
    assert len(server.requests) == 1


def test_malformed_answer_raises(server):
    server.mode = "malformed"
    embedder = build_embedder({"name": "openai_compatible", "base_url": server.base_url}, env={})
    with pytest.raises(EmbedderError, match="malformed embeddings answer"):
        embed(embedder, ["a"])


def test_connection_refused_raises_after_retries():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    embedder = build_embedder({"name": "openai_compatible", "base_url": f"http://127.0.0.1:{port}/v1",
                               "retries": 0}, env={})
    with pytest.raises(EmbedderError, match="ConnectError"):
        embed(embedder, ["a"])
