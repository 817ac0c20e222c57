"""`evalh schema`: the JSON Schema of eval.yaml and of a dataset row, from the models that load them."""

from __future__ import annotations

import json

import jsonschema
from click.testing import CliRunner

from evalh_pipeline.cli import main


def _schema(kind: str) -> dict:
    result = CliRunner().invoke(main, ["schema", kind], standalone_mode=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_case_schema_has_the_cases_own_evaluators():
    schema = _schema("case")
    assert schema["properties"]["evaluators"]["items"] == {"$ref": "#/$defs/CaseEvaluator"}
    row = {"id": "a", "input": {"q": "?"},
           "evaluators": [{"name": "says_x", "type": "regex_match", "config": {"pattern": "x"}}]}
    jsonschema.validate(row, schema)
    bad = {**row, "evaluators": [{"name": "says_x", "type": "regex_match", "weight": 2}]}
    try:
        jsonschema.validate(bad, schema)
    except jsonschema.ValidationError as exc:
        assert "weight" in exc.message
    else:
        raise AssertionError("an entry with an unknown key passed the schema")


def test_the_eval_schema_requires_what_eval_yaml_requires():
    schema = _schema("eval")
    assert {"eval", "systems"} <= set(schema["required"])
    assert "evaluators" in schema["properties"]
