"""A run in which no system answered: every trace errored with no output, read from traces.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

from evalh_pipeline.queries.unanswered import unanswered_run


def _traces(path: Path, *traces: dict) -> Path:
    path.write_text("".join(json.dumps({"case_id": f"c{i}", "variant_name": "v", **t}) + "\n"
                            for i, t in enumerate(traces)))
    return path


REFUSED = {"error": {"type": "adapter_error", "message": "connection refused"}, "output": {}}
START = {"error": {"type": "config_error", "message": "cannot import module 'agnet'"}, "output": {}}


def test_every_cell_errored_with_no_answer_names_the_most_common_error_first(tmp_path):
    found = unanswered_run(_traces(tmp_path / "t.jsonl", START, REFUSED, START))
    assert found is not None
    assert (found.cells, found.count, found.error_type) == (3, 2, "config_error")
    assert found.cause().startswith("config_error: cannot import module 'agnet' (2 of 3 cells;")


def test_one_answer_or_a_partial_answer_is_not_a_run_without_answers(tmp_path):
    answered = {"output": {"final_answer": "Paris"}}
    assert unanswered_run(_traces(tmp_path / "a.jsonl", REFUSED, answered)) is None
    partial = {"error": {"type": "timeout", "message": "no response within 5s"}, "output": {"final_answer": "Par"}}
    assert unanswered_run(_traces(tmp_path / "b.jsonl", REFUSED, partial)) is None
    structured = {"error": {"type": "adapter_error", "message": "x"}, "output": {"structured": {"a": 1}}}
    assert unanswered_run(_traces(tmp_path / "c.jsonl", structured)) is None


def test_a_run_without_traces_is_not_failed(tmp_path):
    assert unanswered_run(tmp_path / "missing.jsonl") is None
    assert unanswered_run(_traces(tmp_path / "empty.jsonl")) is None


def test_a_long_multi_line_message_is_one_bounded_line(tmp_path):
    long = {"error": {"type": "exception", "message": "RuntimeError: " + "x\n" * 1000}, "output": {}}
    cause = unanswered_run(_traces(tmp_path / "t.jsonl", long)).cause()
    assert "\n" not in cause and len(cause) < 600 and cause.startswith("exception: RuntimeError: x x")
