"""http_paths: a plain path walked directly matches exactly what jsonpath-ng matches."""

from __future__ import annotations

import pytest
from jsonpath_ng.ext import parse

from evalh_pipeline.systems.http_paths import JsonPath, find_first
from evalh_pipeline.systems.http_presets import PRESETS

DOCUMENTS = [
    {"choices": [{"message": {"content": "Paris", "tool_calls": [{"id": "c1"}]}}], "usage": {"prompt_tokens": 3},
     "id": "chatcmpl-1"},
    {"choices": [{"message": {"content": None}}], "usage": None},
    {"choices": [], "id": None},
    {"choices": {"0": {"message": "x"}}},
    {"choices": "text", "usage": [1, 2]},
    {"choices": [[{"message": 1}], {"message": {"content": ["a", "b"]}}]},
    {"a": {"b.c": 1, "": 2, "0": 3}, "list": [10, 20, 30]},
    [{"choices": 1}],
    "a string",
    None,
    7,
]

PLAIN = ["$", "$.choices", "$.choices[0]", "$.choices[0].message.content", "$.choices[1].message.content",
         "$.choices[-1].message", "$.choices[-3].message", "$.usage.prompt_tokens", "$.id", "$.list[2]",
         "$.list[-1]", "$.list[3]", "$['a']['b.c']", "$.a['0']", "$[0].choices", "$.choices[0][0].message"]
OTHER = ['$.content[?(@.type=="text")].text', "$.choices[*].message", "$..content", "$.list[0:2]", "$.a.*",
         "$.choices[0,1]"]
PRESET_PATHS = sorted({p for preset in PRESETS.values() for v in preset.response_mapping.values()
                       for p in ([v] if isinstance(v, str) else v)})


@pytest.mark.parametrize("text", PLAIN + OTHER + PRESET_PATHS)
def test_a_path_matches_what_jsonpath_ng_matches(text):
    path = JsonPath(text)
    for document in DOCUMENTS:
        assert path.values(document) == [m.value for m in parse(text).find(document)], (text, document)


def test_the_first_path_that_matches_anything_wins():
    paths = [JsonPath("$.missing"), JsonPath("$.list[1]"), JsonPath("$.list[0]")]
    assert find_first(paths, DOCUMENTS[6]) == [20]
    assert find_first(paths[:1], DOCUMENTS[6]) is None


def test_an_invalid_path_is_refused_when_parsed():
    with pytest.raises(Exception):  # noqa: B017 - jsonpath-ng raises several types
        JsonPath("$.[")
