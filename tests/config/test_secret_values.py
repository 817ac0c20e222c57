"""secret_values: which expanded ${VAR} values are secrets (by name, by key, by use, from the host)."""

from __future__ import annotations

import pytest

from evalh_pipeline.config.env import expand_env, secret_values


def secrets_of(config, env, host=None):
    _, subs = expand_env(config, env)
    return secret_values(subs, host or {})


def test_a_variable_named_like_a_secret_is_one_wherever_it_is_used():
    assert secrets_of({"metadata": {"note": "${OPENAI_API_KEY}"}}, {"OPENAI_API_KEY": "sk-1"}) == {"sk-1"}


def test_a_value_under_a_secret_looking_key_is_one_whatever_its_variable_is_called():
    assert secrets_of({"systems": [{"api_key": "${LLM_CRED}"}]}, {"LLM_CRED": "c-9"}) == {"c-9"}


@pytest.mark.parametrize("key_path", [("headers", "X-Tenant"), ("env", "LOGIN"), ("command", 2),
                                      ("query_params", "ref"), ("config", "args", 0)])
def test_a_value_substituted_where_credentials_travel_is_one(key_path):
    node: object = "${PLAIN}"
    for part in reversed(key_path):
        node = [None, None, node] if isinstance(part, int) else {part: node}
    assert secrets_of({"systems": [node]}, {"PLAIN": "value-123"}) == {"value-123"}


def test_in_a_url_only_the_scheme_host_and_port_are_public():
    config = {"endpoint": "${BASE}/v1/chat?s=${SIG}#${FRAG}", "other": "https://${USERINFO}@api.example.com/x",
              "whole": "${WHOLE}"}
    env = {"BASE": "http://127.0.0.1:8765", "SIG": "sig-abc", "FRAG": "frag-1",
           "USERINFO": "user:pass-1", "WHOLE": "https://h.example:443/p/tok-42?key=k-77"}
    assert secrets_of(config, env) == {"sig-abc", "frag-1", "user:pass-1", "/p/tok-42?key=k-77"}


@pytest.mark.parametrize("value", ["8765", "true", "off", "abc", ""])
def test_values_too_plain_to_be_credentials_are_not_masked_by_use(value):
    assert secrets_of({"env": {"PORT": "${PLAIN}"}}, {"PLAIN": value}) == frozenset()


def test_plain_values_elsewhere_are_not_secrets():
    assert secrets_of({"eval": {"name": "${NAME}"}, "model": "${MODEL}"}, {"NAME": "demo", "MODEL": "gpt-x"}) == set()


def test_host_credentials_are_secrets_but_not_lookalikes():
    host = {"OPENAI_API_KEY": "sk-host-123456", "GITHUB_TOKEN": "ghp_0123456789", "DB_PASSWORD": "hunter2-long",
            "AWS_SECRET_ACCESS_KEY": "aws/secret+key", "PWD": "/work/here", "TOKENIZERS_PARALLELISM": "false",
            "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock", "MONKEY": "banana-banana", "SHORT_TOKEN": "abc"}
    assert secrets_of({}, {}, host) == {"sk-host-123456", "ghp_0123456789", "hunter2-long", "aws/secret+key"}


def test_defaults_written_in_the_file_are_not_substitutions():
    _, subs = expand_env({"headers": {"X": "${UNSET:-literal-default}"}}, {})
    assert subs == []
