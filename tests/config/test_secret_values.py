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


@pytest.mark.parametrize("key_path", [("headers", "X-Tenant"), ("env", "SERVICE_LOGIN"), ("env", "DB_PASS"),
                                      ("query_params", "ref"), ("headers", "Authorization")])
def test_a_value_substituted_where_credentials_travel_is_one(key_path):
    node: object = "${PLAIN}"
    for part in reversed(key_path):
        node = {part: node}
    assert secrets_of({"systems": [node]}, {"PLAIN": "value-123"}) == {"value-123"}


@pytest.mark.parametrize("key_path", [("headers", "anthropic-version"), ("headers", "Accept"), ("env", "MODEL"),
                                      ("query_params", "api-version"), ("env", "WORKDIR")])
def test_a_value_where_no_credential_travels_is_not_one(key_path):
    node: object = "${PLAIN}"
    for part in reversed(key_path):
        node = {part: node}
    assert secrets_of({"systems": [node]}, {"PLAIN": "value-123"}) == frozenset()


def test_in_argv_only_values_of_flags_named_like_credentials_are_secrets():
    command = ["tool", "--sig", "${A}", "--api-key=${B}", "--model", "${C}", "${D}", "-H", "X-Api-Key: ${E}",
               "-H", "Accept: ${F}", "TOKEN=${G}"]
    env = {k: f"value-{k}" for k in "ABCDEFG"}
    assert secrets_of({"systems": [{"command": command}]}, env) == {"value-A", "value-B", "value-E", "value-G"}


def test_in_a_url_the_scheme_host_port_and_path_are_public():
    config = {"endpoint": "${BASE}/v1/chat?s=${SIG}#${FRAG}", "other": "https://${USERINFO}@api.example.com/x",
              "whole": "${WHOLE}", "azure": "${AZURE}"}
    env = {"BASE": "http://127.0.0.1:8765", "SIG": "sig-abc", "FRAG": "frag-1",
           "USERINFO": "user:pass-1", "WHOLE": "https://h.example:443/p/tok-42?key=k-77",
           "AZURE": "https://x.openai.azure.com/openai/deployments/d/chat?api-version=2024-02-01"}
    assert secrets_of(config, env) == {"sig-abc", "frag-1", "user:pass-1", "k-77"}


def test_a_dsn_masks_its_password_not_its_database():
    config = {"output": [{"dsn": "${URL_DSN}"}, {"dsn": "${PG_CONNINFO}"}]}
    env = {"URL_DSN": "postgresql://evalh:pw-url-1@db.internal:5432/evals?sslmode=require",
           "PG_CONNINFO": "host=db user=evalh password='pw kw 2' dbname=evals"}
    assert secrets_of(config, env) == {"evalh:pw-url-1", "pw kw 2"}


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
