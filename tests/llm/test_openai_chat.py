"""The OpenAI chat-completions protocol module: the grading call (what the OpenAI Evals and
promptfoo graders send) against the loopback fake judge server, and reading a reply."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from evalh_pipeline.llm.openai_chat import DEFAULT_BASE_URL, grading_reply, message_text
from evalh_pipeline.llm.settings import resolve_endpoint
from tests.support.fake_judge_server import FakeJudgeServer
from tests.support.http_server import free_port


@dataclass
class Endpoint:
    base_url_env: str = "GRADER_BASE_URL"
    default_base_url: str = DEFAULT_BASE_URL
    api_key_env: str = "GRADER_KEY"
    timeout_seconds: float = 5.0


BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "grade: mentions \"Paris\""}]}


def test_the_grading_call_posts_the_body_as_given_with_the_named_key():
    with FakeJudgeServer() as server:
        env = {"GRADER_BASE_URL": server.openai_base_url + "/", "GRADER_KEY": "sk-grader"}
        reply = asyncio.run(grading_reply(env, Endpoint(), BODY))
        (sent,) = server.requests
    assert reply is not None and reply.startswith("{")
    assert sent["path"] == "/v1/chat/completions" and sent["body"] == BODY
    assert sent["headers"]["authorization"] == "Bearer sk-grader"


def test_a_grading_call_answered_with_an_error_or_not_reached_says_so():
    with FakeJudgeServer() as server:
        server.script("error_500")
        with pytest.raises(RuntimeError, match=r"^grading call answered HTTP 500: .*scripted server error"):
            asyncio.run(grading_reply({"GRADER_BASE_URL": server.openai_base_url}, Endpoint(), BODY))
    closed = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(RuntimeError, match=rf"^grading call to {closed} failed: ConnectError"):
        asyncio.run(grading_reply({"GRADER_BASE_URL": closed}, Endpoint(), BODY))


def test_the_reply_text_joins_content_parts_and_keeps_a_missing_content_missing():
    def reply(content: object) -> dict:
        return {"choices": [{"message": {"role": "assistant", "content": content}}]}

    assert message_text(reply("Y")) == "Y"
    assert message_text(reply([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}, "x"])) == "ab"
    assert message_text(reply(None)) is None


def test_the_endpoint_is_the_given_url_then_the_environment_then_the_public_one():
    env = {"BASE": "http://127.0.0.1:9/v1/", "KEY": "k"}
    named = {"base_url_env": "BASE", "default_base_url": DEFAULT_BASE_URL, "api_key_env": "KEY"}
    assert resolve_endpoint(env, base_url="http://127.0.0.1:8/v1/", **named) == ("http://127.0.0.1:8/v1", "k")
    assert resolve_endpoint(env, base_url=None, **named) == ("http://127.0.0.1:9/v1", "k")
    assert resolve_endpoint({}, base_url=None, **named) == (DEFAULT_BASE_URL, None)
