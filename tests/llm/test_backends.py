"""Judge backends against the real local fake server: request shapes, errors, model -> backend."""

from __future__ import annotations

import asyncio
import socket

import pytest

from evalh_pipeline.llm.anthropic_messages import ANTHROPIC_VERSION, AnthropicBackend
from evalh_pipeline.llm.chat import JudgeBackend, JudgeError, JudgeTransientError
from tests.support.fake_judge_server import FakeJudgeServer
from evalh_pipeline.llm.openai_chat import OpenAICompatibleBackend
from evalh_pipeline.judges.prompt import verdict_schema
from evalh_pipeline.llm.registry import JUDGE_BACKENDS, BackendNotFound, resolve_backend

SCHEMA = verdict_schema(1, None)
USER = "## Final answer\nThe average is $1.2M.\n\n## Assertions\n1. mentions \"average\""


@pytest.fixture
def server():
    with FakeJudgeServer(hang_seconds=5) as running:
        yield running


def backend(cls: type[JudgeBackend], base_url: str, env: dict[str, str] | None = None, timeout: float = 5):
    return cls(cls.settings_from(env or {}, model="judge-1", base_url=base_url, api_key_env=None,
                                 timeout_seconds=timeout, max_tokens=256))


def test_openai_compatible_sends_chat_completions_with_bearer_key_and_json_schema(server):
    judge = backend(OpenAICompatibleBackend, server.openai_base_url, {"OPENAI_API_KEY": "sk-test-123"})
    reply = asyncio.run(judge.complete("be strict", USER, SCHEMA))
    assert reply.text == '{"assertions": [{"index": 1, "passed": true, "reason": "mentions [\'average\']"}]}'
    assert reply.tokens_in > 0 and reply.tokens_out > 0 and reply.model == "judge-1"
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == "Bearer sk-test-123"
    assert sent["body"]["response_format"]["json_schema"]["schema"] == SCHEMA
    assert [m["role"] for m in sent["body"]["messages"]] == ["system", "user"]


def test_reasoning_models_get_max_completion_tokens_and_no_temperature():
    chat = OpenAICompatibleBackend(OpenAICompatibleBackend.settings_from(
        {}, model="o3-mini", base_url="http://127.0.0.1:1/v1", api_key_env=None, timeout_seconds=1, max_tokens=64))
    _, _, body = chat.request("s", "u", SCHEMA)
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body and "temperature" not in body


def test_anthropic_sends_messages_with_version_header_and_the_schema_in_the_system_prompt(server):
    judge = backend(AnthropicBackend, server.anthropic_base_url, {"ANTHROPIC_API_KEY": "ak-test"})
    reply = asyncio.run(judge.complete("be strict", USER, SCHEMA))
    assert '"passed": true' in reply.text
    sent = server.requests[0]
    assert sent["path"] == "/v1/messages"
    assert sent["headers"]["x-api-key"] == "ak-test"
    assert sent["headers"]["anthropic-version"] == ANTHROPIC_VERSION
    assert '"minItems": 1' in sent["body"]["system"] and sent["body"]["max_tokens"] == 256


def test_base_url_and_key_come_from_the_environment_when_the_config_names_none(server):
    settings = OpenAICompatibleBackend.settings_from(
        {"OPENAI_BASE_URL": server.openai_base_url + "/", "MY_KEY": "k1"}, model="m", base_url=None,
        api_key_env="MY_KEY", timeout_seconds=5, max_tokens=10)
    assert settings.base_url == server.openai_base_url and settings.api_key == "k1"


def test_5xx_and_timeouts_are_transient_errors(server):
    server.script("error_500", "hang")
    # The 500 gets a timeout a loaded machine cannot miss; the hang, a short one.
    with pytest.raises(JudgeTransientError, match="HTTP 500"):
        asyncio.run(backend(OpenAICompatibleBackend, server.openai_base_url, timeout=30).complete("s", USER, SCHEMA))
    with pytest.raises(JudgeTransientError, match="timed out after 0.3s"):
        asyncio.run(backend(OpenAICompatibleBackend, server.openai_base_url, timeout=0.3).complete("s", USER, SCHEMA))


def test_a_refused_connection_is_a_transient_error_naming_it():
    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    judge = backend(OpenAICompatibleBackend, f"http://127.0.0.1:{port}/v1")
    with pytest.raises(JudgeTransientError, match="failed: ConnectError"):
        asyncio.run(judge.complete("s", USER, SCHEMA))


def test_the_public_endpoint_without_a_key_is_refused_before_any_call():
    judge = backend(AnthropicBackend, AnthropicBackend.default_base_url)
    with pytest.raises(JudgeError, match="set ANTHROPIC_API_KEY"):
        asyncio.run(judge.complete("s", USER, SCHEMA))


@pytest.mark.parametrize(("model", "backend_name", "api_model"), [
    ("gpt-4o-mini", "openai_compatible", "gpt-4o-mini"),
    ("o3-mini", "openai_compatible", "o3-mini"),
    ("o1", "openai_compatible", "o1"),
    ("openai/gpt-4.1", "openai_compatible", "gpt-4.1"),
    ("claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
    ("anthropic/claude-haiku-4-5", "anthropic", "claude-haiku-4-5"),
])
def test_the_backend_is_chosen_by_model_name(model, backend_name, api_model):
    resolved = resolve_backend(model)
    assert (resolved.name, resolved.api_model) == (backend_name, api_model)


def test_an_explicit_backend_wins_over_the_model_name():
    resolved = resolve_backend("claude-look-alike", "openai_compatible")
    assert (resolved.name, resolved.api_model) == ("openai_compatible", "claude-look-alike")


def test_an_unknown_model_or_backend_says_what_to_configure_or_install():
    with pytest.raises(BackendNotFound, match=r"no judge backend serves model 'llama-3-8b': set `backend:` "
                                              r"\(known: anthropic, openai_compatible\)"):
        resolve_backend("llama-3-8b")
    with pytest.raises(BackendNotFound, match=r"unknown judge backend 'gemini'.*install the package that provides "
                                              r"it \(entry point group 'evalh_pipeline.judges'\)"):
        resolve_backend("gemini-2.5-pro", "gemini")


def test_a_registered_backend_serves_its_own_model_patterns():
    class LocalBackend(OpenAICompatibleBackend):
        name = "local"
        model_patterns = ("llama-*",)

    JUDGE_BACKENDS.register("local", LocalBackend)
    try:
        assert resolve_backend("llama-3-8b").cls is LocalBackend
    finally:
        JUDGE_BACKENDS.unregister("local")
