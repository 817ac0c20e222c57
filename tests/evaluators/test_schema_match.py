"""schema_match: JSON Schema on output.structured or a field, JSON strings, errors with paths."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.schema_match import SchemaMatch
from evalh_pipeline.models import EvalCase, Trace, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)

LISTING = {
    "type": "object",
    "required": ["suburb", "price"],
    "properties": {
        "suburb": {"type": "string"},
        "price": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "additionalProperties": False,
}


def trace(answer: str | None = None, structured: dict | None = None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(final_answer=answer, structured=structured))


def judge(config: dict, the_trace: Trace):
    return asyncio.run(SchemaMatch("shape", "schema_match", config).evaluate(EvalCase(id="c1"), the_trace, None))


def test_passes_when_output_structured_matches_the_schema():
    verdict = judge({"schema": LISTING}, trace(structured={"suburb": "Richmond", "price": 1200000}))
    assert verdict.passed and verdict.score == 1.0
    assert verdict.reason == "output.structured matches the schema"
    assert verdict.detail["errors"] == [] and verdict.detail["field"] == "output.structured"


def test_fails_with_every_error_and_its_json_path():
    structured = {"price": -5, "tags": ["a", 3], "colour": "red"}
    verdict = judge({"schema": LISTING}, trace(structured=structured))
    assert not verdict.passed and verdict.score == 0.0
    errors = {(e["path"], e["message"]) for e in verdict.detail["errors"]}
    assert errors == {
        ("$", "'suburb' is a required property"),
        ("$.price", "-5 is less than the minimum of 0"),
        ("$.tags[1]", "3 is not of type 'string'"),
        ("$", "Additional properties are not allowed ('colour' was unexpected)"),
    }
    assert verdict.detail["error_count"] == 4 and verdict.detail["errors_truncated"] is False
    assert verdict.reason.startswith("output.structured does not match the schema: $")
    assert verdict.reason.endswith("(and 3 more, see detail.errors)")


def test_a_string_field_holding_json_is_parsed_with_parse_json():
    verdict = judge({"schema": LISTING, "field": "output.final_answer", "parse_json": True},
                    trace('{"suburb": "Carlton", "price": 900000}'))
    assert verdict.passed and verdict.detail["parsed_from_string"] is True


def test_without_parse_json_a_string_is_validated_as_a_string_as_eval_harness():
    verdict = judge({"schema": LISTING, "field": "output.final_answer"}, trace('{"suburb": "Carlton", "price": 900000}'))
    assert not verdict.passed and verdict.detail["parsed_from_string"] is False
    assert judge({"schema": {"type": "string"}, "field": "output.final_answer"}, trace("plain text")).passed


def test_a_string_field_that_is_not_json_fails_with_the_parse_error():
    verdict = judge({"schema": LISTING, "field": "output.final_answer", "parse_json": True}, trace("The price is $1.2M"))
    assert not verdict.passed
    assert verdict.reason.startswith("output.final_answer is a string but not JSON (Expecting value: line 1 column 1")


def test_missing_field_fails_and_names_it_and_a_null_one_is_validated_as_null():
    verdict = judge({"schema": LISTING}, trace(answer="{}"))
    assert not verdict.passed and verdict.reason.startswith("output.structured does not match the schema: $: None is not")
    assert judge({"schema": {"type": ["object", "null"]}}, trace(answer="{}")).passed  # as eval-harness
    nested = judge({"schema": {"type": "string"}, "field": "output.structured.suburb"}, trace(structured={}))
    assert not nested.passed and "output.structured.suburb is not present" in nested.reason


def test_nested_field_and_local_refs():
    schema = {"$defs": {"money": {"type": "number", "minimum": 0}}, "$ref": "#/$defs/money"}
    config = {"schema": schema, "field": "output.structured.price"}
    assert judge(config, trace(structured={"price": 10.5})).passed
    assert not judge(config, trace(structured={"price": "ten"})).passed


def test_schema_draft_named_by_dollar_schema_is_honoured():
    # Draft 4 `exclusiveMinimum` is a boolean modifier of `minimum`; in 2020-12 it is a number.
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
              "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}}
    assert not judge({"schema": draft4}, trace(structured={"n": 0})).passed
    assert judge({"schema": draft4}, trace(structured={"n": 1})).passed


def test_error_list_is_capped_at_twenty():
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    verdict = judge({"schema": schema}, trace(structured={f"k{i}": "x" for i in range(30)}))
    assert verdict.detail["error_count"] == 30 and len(verdict.detail["errors"]) == 20
    assert verdict.detail["errors_truncated"] is True


def test_remote_refs_are_never_fetched():
    evaluator = SchemaMatch("shape", "schema_match", {"schema": {"$ref": "https://example.invalid/listing.json"}})
    with pytest.raises(ValueError, match="remote ones are never fetched"):
        asyncio.run(evaluator.evaluate(EvalCase(id="c1"), trace(structured={}), None))


def test_invalid_schema_is_rejected_by_the_config_model_with_its_location():
    bad = {"type": "object", "properties": {"price": {"type": "integr"}}}
    with pytest.raises(ValidationError) as info:
        SchemaMatch("shape", "schema_match", {"schema": bad})
    (error,) = info.value.errors()
    assert error["loc"] == ("schema",)
    assert "invalid JSON Schema at $.properties.price.type: 'integr' is not valid" in error["msg"]


@pytest.mark.parametrize("config", [{}, {"schema": "not a dict"}, {"schema": {}, "field": ""},
                                    {"schema": {}, "schema_path": "x.json"}])
def test_bad_config_is_rejected_by_the_config_model(config):
    with pytest.raises(ValidationError):
        SchemaMatch("shape", "schema_match", config)


@pytest.mark.integration
def test_the_schema_key_does_not_warn_about_shadowing_basemodel_schema():
    # A fresh interpreter: the module is already imported (and its warning spent) in this one.
    code = "import evalh_pipeline.evaluators.schema_match"
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_pickled_copy_judges_like_the_original():
    import pickle

    original = SchemaMatch("shape", "schema_match", {"schema": LISTING})
    copy = pickle.loads(pickle.dumps(original))  # re-evaluation's worker processes get it this way
    case = EvalCase(id="c1")
    for structured in ({"suburb": "Richmond", "price": 1}, {"suburb": "Richmond", "price": -1}, {}):
        expected = original.evaluate_sync(case, trace(structured=structured), None)
        assert copy.evaluate_sync(case, trace(structured=structured), None) == expected
