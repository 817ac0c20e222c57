"""`evalh schema`: the JSON Schema of eval.yaml and of a dataset row, from the models that load them."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_the_cases_schema_is_a_cases_file_of_rows():
    schema = _schema("cases")
    cases_file = {"schema_version": "1.0", "cases": [{"id": "a", "input": {"q": "?"}}]}
    jsonschema.validate(cases_file, schema)
    try:
        jsonschema.validate({"cases": [{"input": {"q": "?"}}]}, schema)
    except jsonschema.ValidationError as exc:
        assert "'id' is a required property" in exc.message
    else:
        raise AssertionError("a row without an id passed the schema")


def test_path_prints_the_schema_file_the_package_ships():
    result = CliRunner().invoke(main, ["schema", "eval", "--path"], standalone_mode=False)
    assert result.exit_code == 0, result.output
    shipped = Path(result.output.strip())
    assert shipped.name == "eval.schema.json" and json.loads(shipped.read_text()) == _schema("eval")
