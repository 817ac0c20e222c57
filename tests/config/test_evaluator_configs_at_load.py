"""Evaluator configs are validated when the eval loads: bad patterns and schemas never reach a run."""

from __future__ import annotations

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from tests.support.evals import write_eval

BROKEN = """
  - name: mentions_paris
    type: contains_text
  - name: price_format
    type: regex_match
    config: {pattern: '\\$(\\d+'}
  - name: listing_shape
    type: schema_match
    config:
      schema: {type: object, properties: {price: {type: integr}}}
"""


def test_bad_regex_and_invalid_schema_are_config_errors_naming_their_keys(tmp_path):
    path = write_eval(tmp_path / "toy", evaluators=BROKEN)
    with pytest.raises(ConfigError) as info:
        load_eval(path, env={})
    lines = str(info.value).splitlines()
    regex = [line for line in lines if "evaluators[1].config.pattern:" in line]
    schema = [line for line in lines if "evaluators[2].config.schema:" in line]
    assert len(regex) == 1 and len(schema) == 1, lines
    assert regex[0].startswith("eval.yaml:")
    assert "invalid regular expression /\\$(\\d+/: missing ), unterminated subpattern at position 2" in regex[0]
    assert schema[0].startswith("eval.yaml:")
    assert "invalid JSON Schema at $.properties.price.type: 'integr' is not valid" in schema[0]


def test_the_same_evaluators_load_once_fixed(tmp_path):
    fixed = BROKEN.replace("'\\$(\\d+'", "'\\$(\\d+)'").replace("integr}", "integer}")
    spec = load_eval(write_eval(tmp_path / "toy", evaluators=fixed), env={})
    assert [e.type for e in spec.config.evaluators] == ["contains_text", "regex_match", "schema_match"]
