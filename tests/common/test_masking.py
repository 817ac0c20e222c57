"""Masking: credentials never reach config.yaml; token counts and limits are left alone."""

from __future__ import annotations

import json

import pytest

from evalh_pipeline.common.masking import MASK, is_secret_key, mask_config, mask_text


@pytest.mark.parametrize("key", ["api_key", "API_KEY", "apikey", "openai_api_key", "Authorization", "x-api-key",
                                 "X-Auth-Token", "password", "db_password", "client_secret", "token",
                                 "access_token", "Proxy-Authorization", "cookie"])
def test_credential_keys_are_secret(key):
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["max_tokens", "token_input", "token_output", "tokens_per_second", "keyword",
                                 "monkey", "passage", "author", "primary_key_column"])
def test_lookalike_keys_are_not_secret(key):
    assert not is_secret_key(key)


def test_mask_config_masks_secret_keys_and_headers_but_not_token_counts():
    config = {
        "systems": [{
            "name": "http_main",
            "api_key": "sk-live-1",
            "headers": {"Authorization": "Bearer abc", "x-api-key": "k-2", "Accept": "application/json"},
            "auth": {"user": "u", "password": "p"},
            "max_tokens": 512,
            "metrics": {"token_input": 10},
        }],
        "db": {"password": "hunter2", "port": 5432},
    }
    masked = mask_config(config)
    system = masked["systems"][0]
    assert system["api_key"] == MASK and system["auth"] == MASK
    assert system["headers"] == {"Authorization": MASK, "x-api-key": MASK, "Accept": "application/json"}
    assert system["max_tokens"] == 512 and system["metrics"] == {"token_input": 10}
    assert masked["db"] == {"password": MASK, "port": 5432}


def test_mask_config_does_not_modify_its_input():
    config = {"api_key": "sk", "nested": {"token": "t"}}
    mask_config(config)
    assert config == {"api_key": "sk", "nested": {"token": "t"}}


def test_empty_secret_values_stay_empty():
    assert mask_config({"api_key": "", "token": None}) == {"api_key": "", "token": None}


def test_url_userinfo_is_masked():
    assert mask_text("postgres://admin:s3cret@db.internal:5432/evals") == f"postgres://{MASK}@db.internal:5432/evals"


@pytest.mark.parametrize("url, expected", [
    ("https://api.x.com/v1?token=abc123&model=m", f"https://api.x.com/v1?token={MASK}&model=m"),
    ("https://api.x.com/v1?model=m&api_key=abc", f"https://api.x.com/v1?model=m&api_key={MASK}"),
    ("https://api.x.com/v1?access_token=abc#frag", f"https://api.x.com/v1?access_token={MASK}#frag"),
])
def test_url_secret_query_parameters_are_masked(url, expected):
    assert mask_text(url) == expected


def test_url_without_credentials_is_unchanged():
    url = "https://api.x.com/v1/chat?model=m&max_tokens=100"
    assert mask_text(url) == url


def test_known_secret_values_are_masked_anywhere_in_the_config():
    config = {"endpoint": "https://x/v1/sk-abc/chat", "notes": ["uses sk-abc"], "model": "m", "n": 3}
    assert mask_config(config, frozenset({"sk-abc"})) == {
        "endpoint": f"https://x/v1/{MASK}/chat", "notes": [f"uses {MASK}"], "model": "m", "n": 3,
    }


class _ShortestFirst(frozenset):
    """A frozenset that iterates its shortest members first (a legal frozenset order)."""

    def __iter__(self):
        return iter(sorted(frozenset.__iter__(self), key=len))


def test_a_secret_containing_another_secret_is_fully_masked():
    secrets = _ShortestFirst({"abc123", "abc123-longer-secret"})
    assert "longer-secret" not in mask_text("key=abc123-longer-secret", secrets)


def test_mask_json_text_masks_strings_escaped_or_not_keys_included():
    import json

    from evalh_pipeline.common.masking import mask_json_text

    document = json.dumps({"sk-1": "keep the key", "answer": 'said "sk-1" and caf\u00e9-\u00e9t\u00e9',
                           "nested": [{"x": "sk-1sk-1"}], "n": 3}, ensure_ascii=True)
    masked = json.loads(mask_json_text(document, frozenset({"sk-1", "caf\u00e9-\u00e9t\u00e9"})))
    assert masked == {MASK: "keep the key", "answer": f'said "{MASK}" and {MASK}',
                      "nested": [{"x": MASK + MASK}], "n": 3}


def test_mask_json_text_returns_the_same_text_when_no_secret_occurs():
    from evalh_pipeline.common.masking import mask_json_text

    document = '{"answer":"nothing to hide"}'
    assert mask_json_text(document, frozenset({"sk-1"})) is document
    assert mask_json_text(document, frozenset()) is document


def test_mask_json_line_keeps_the_line_ending_and_returns_clean_lines_unchanged():
    from evalh_pipeline.common.masking import mask_json_line

    line = b'{"reason":"saw sk-1"}\n'
    assert mask_json_line(line, frozenset({"sk-1"})) == b'{"reason":"saw ' + MASK.encode() + b'"}\n'
    clean = b'{"reason":"fine"}\n'
    assert mask_json_line(clean, frozenset({"sk-1"})) is clean


def test_a_secret_used_as_a_json_key_is_masked_and_no_value_is_lost():
    from evalh_pipeline.common.masking import mask_json_text

    document = json.dumps({"tool_calls": [{"arguments": {"sk-live-1": "a", "x-sk-live-1": "b", "***MASKED***": "c"}}]})
    masked = json.loads(mask_json_text(document, frozenset({"sk-live-1"})))
    arguments = masked["tool_calls"][0]["arguments"]
    assert "sk-live-1" not in json.dumps(masked)
    assert sorted(arguments.values()) == ["a", "b", "c"]
    assert arguments["x-***MASKED***"] == "b" and arguments["***MASKED***"] == "c"
