"""The record codec follows the models: byte-identical lines, and fast reads that agree with JSON."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field, create_model

from evalh_pipeline.models import EvalCase, EvaluationResult, Trace, TraceError
from evalh_pipeline.queries.sql import RESULT_COLUMNS, TRACE_COLUMNS
from evalh_pipeline.store.records import CASES, RESULTS, TRACES, RecordCodec

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)


def _result_values(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "run_id": "r1", "case_id": "c1", "variant_name": "base", "sample": 2, "evaluator": "e",
        "evaluator_type": "contains_text", "passed": True, "score": 0.5, "reason": "ok", "detail": {"k": [1, "é"]},
        "started_at": T0, "finished_at": T0 + timedelta(milliseconds=3), "latency_ms": 3,
    }
    return {**values, **overrides}


@pytest.mark.parametrize("overrides", [
    {},
    {"score": None, "passed": False, "reason": "naïve “quotes” \\ and \n newline"},
    {"score": math.inf},
    {"score": math.nan, "detail": {}},
    {"variant_name": 'a "quoted" name', "sample": 0},
])
def test_fast_result_line_is_the_models_own_json(overrides):
    values = _result_values(**overrides)
    assert RESULTS.encode_values(values) == EvaluationResult(**values).model_dump_json().encode() + b"\n"


def test_fast_values_of_every_field_in_order_are_encoded_as_given():
    values = {name: None for name in RESULTS.fields} | {"schema_version": "1.0", **_result_values(), "error": None}
    assert tuple(values) == RESULTS.fields
    assert RESULTS.encode_values(values) == EvaluationResult(**values).model_dump_json().encode() + b"\n"


def test_encoding_a_record_is_its_model_dump_json():
    trace = Trace(run_id="r", case_id="c", variant_name="v", started_at=T0, finished_at=T0, latency_ms=0,
                  error=TraceError(type="timeout", message="slow"))
    assert TRACES.encode(trace) == trace.model_dump_json().encode() + b"\n"


def test_codec_fields_are_the_models_fields_in_order():
    for codec, model in ((CASES, EvalCase), (TRACES, Trace), (RESULTS, EvaluationResult)):
        assert codec.fields == tuple(model.model_fields)


def test_a_field_added_to_a_model_reaches_the_fast_writer():
    # As if a 1.x release added a field: the codec derived from the model writes it too.
    grown = create_model("GrownResult", __base__=EvaluationResult, tags=(list[str], Field(default_factory=list)))
    codec = RecordCodec(grown, "result")
    values = _result_values()
    assert codec.encode_values(values) == grown(**values).model_dump_json().encode() + b"\n"
    assert b'"tags":[]' in codec.encode_values(values)


def test_a_required_field_missing_from_fast_values_is_an_error_not_a_silent_gap():
    values = _result_values()
    del values["evaluator"]
    with pytest.raises(KeyError, match="evaluator"):
        RESULTS.encode_values(values)


def _trace_line(**overrides: Any) -> bytes:
    trace = Trace(**{"run_id": "r", "case_id": "c", "variant_name": "v", "started_at": T0, "finished_at": T0,
                     "latency_ms": 0, **overrides})
    return TRACES.encode(trace)


@pytest.mark.parametrize("line", [
    _trace_line(),
    _trace_line(sample=7, variant_name="ünï"),
    # eval-harness and other 1.x writers: no sample, or no schema_version
    b'{"schema_version":"1.0","run_id":"r","case_id":"c","variant_name":"v","started_at":"x"}\n',
    b'{"run_id":"r","case_id":"c","variant_name":"v","sample":3,"started_at":"x"}\n',
    # other layouts and escapes: read by parsing
    b'{"case_id":"c","run_id":"r","variant_name":"v","sample":3}\n',
    b'{"schema_version":"1.0","run_id":"r","case_id":"c","variant_name":"v","other":1,"sample":4}\n',
    b'{"schema_version":"1.0","run_id":"r","case_id":"c\\"q","variant_name":"v\\u00e9"}\n',
])
def test_fields_read_off_a_line_agree_with_parsing_it(line):
    record = json.loads(line)
    expected = (record["case_id"], record["variant_name"], record.get("sample", 0))
    assert TRACES.read_fields(line, "case_id", "variant_name", "sample") == expected


@pytest.mark.parametrize("case_id", ["c", "c" * 600, "c" * 495, 'c,"x":1' * 80, "é" * 300])
@pytest.mark.parametrize("sample", [0, 12345678])
def test_fields_read_off_a_long_line_agree_with_parsing_it(case_id, sample):
    # Ids that end before, at and after the head that is parsed first, commas in them, and a
    # number that a cut in the head could shorten.
    line = TRACES.encode(Trace(run_id="r", case_id=case_id, variant_name="v", sample=sample, started_at=T0,
                               finished_at=T0, latency_ms=0, extra={"pad": "x" * 2000}))
    assert TRACES.read_fields(line, "case_id", "variant_name", "sample") == (case_id, "v", sample)
    assert TRACES.read_fields(line, "trace_hash") == (None,)


def test_every_column_the_queries_read_is_a_field_of_the_record():
    assert set(TRACE_COLUMNS) <= set(TRACES.fields)
    assert set(RESULT_COLUMNS) <= set(RESULTS.fields)


def test_iter_file_reads_back_what_encode_wrote(tmp_path: Path):
    path = tmp_path / "cases.jsonl"
    cases = [EvalCase(id=f"c{i}", input={"q": i}) for i in range(3)]
    path.write_bytes(b"".join(CASES.encode(c) for c in cases))
    assert list(CASES.iter_file(path)) == cases


def _trace_line(**overrides: Any) -> bytes:
    trace = Trace(run_id="r", case_id="c1", variant_name="base", sample=1, started_at=T0, finished_at=T0,
                  latency_ms=42, output={"final_answer": "Paris"}, metrics={"cost_usd": 0.5}, **overrides)
    return TRACES.encode(trace).rstrip(b"\n")


def test_a_projection_holds_the_fields_asked_as_the_whole_record_has_them(tmp_path: Path):
    decode = TRACES.projection({"case_id", "variant_name", "latency_ms", "metrics", "error"})
    line = _trace_line(error=TraceError(type="timeout", message="slow"))
    whole = TRACES.decode(line, tmp_path / "traces.jsonl", 1)
    projected = decode(line, tmp_path / "traces.jsonl", 1)
    for name in ("case_id", "variant_name", "latency_ms", "metrics", "error"):
        assert getattr(projected, name) == getattr(whole, name)
    with pytest.raises(AttributeError):
        projected.output  # noqa: B018 - not asked for: absent, never silently empty


def test_a_projection_migrates_older_lines_and_reports_corrupt_ones_like_decode(tmp_path: Path):
    from evalh_pipeline.store.jsonl import CorruptRecordError

    decode = TRACES.projection({"case_id", "latency_ms"})
    older = json.loads(_trace_line())
    del older["schema_version"]  # a 1.0 line written before the version was recorded
    assert decode(json.dumps(older).encode(), tmp_path / "t.jsonl", 1).latency_ms == 42
    with pytest.raises(CorruptRecordError, match=r"t.jsonl:7: not JSON"):
        decode(b'{"schema_version":"1.0", torn', tmp_path / "t.jsonl", 7)
    with pytest.raises(KeyError, match="no field nonsense"):
        TRACES.projection({"nonsense"})


def test_a_sealed_trace_line_ends_with_the_hash_of_the_rest_and_readers_recompute_it():
    from datetime import datetime, timezone

    from evalh_pipeline.models import Trace
    from evalh_pipeline.store.records import TRACES

    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    line = TRACES.encode(Trace(run_id="r", case_id="c", variant_name="v", started_at=now, finished_at=now,
                               latency_ms=0))
    sealed, digest = TRACES.seal(line)
    assert sealed.endswith(b',"trace_hash":"' + digest.encode() + b'"}\n') and len(digest) == 32
    assert TRACES.content_hash(sealed) == TRACES.content_hash(line) == digest  # unsealed: the same content
    assert TRACES.seal(sealed) == (sealed, digest)  # sealing twice changes nothing
    # Edited by hand, its recorded hash left as it was: the hash of what it says now.
    edited = sealed.replace(b'"case_id":"c"', b'"case_id":"d"')
    assert TRACES.content_hash(edited) != digest
    # Written before the field existed (or by another tool): the hash of the line as it is.
    legacy = line.replace(b',"trace_hash":null', b"")
    assert len(TRACES.content_hash(legacy)) == 32


def test_result_hashes_are_read_off_the_end_of_a_line_or_parsed():
    import json

    from evalh_pipeline.store.records import RESULTS

    fast = b'{"evaluator":"e","detail":{"x":",\\"trace_hash\\":1"},"evaluator_hash":"abc","trace_hash":"def"}\n'
    assert RESULTS.trailing(fast, "evaluator_hash", "trace_hash") == ("abc", "def")
    other = json.dumps({"trace_hash": "def", "evaluator": "e", "evaluator_hash": None}).encode()
    assert RESULTS.trailing(other, "evaluator_hash", "trace_hash") == (None, "def")
