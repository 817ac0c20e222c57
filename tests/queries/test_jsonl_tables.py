"""Reading a run's JSONL into DuckDB: strict for complete files, a torn tail skipped, nothing lost silently."""

from __future__ import annotations

import pytest

from evalh_pipeline.queries.sql import RESULT_COLUMNS, UnreadableRecordsError, connect, load_table

GOOD = '{"case_id": "c1", "variant_name": "a", "evaluator": "x", "passed": true}\n'


def test_a_malformed_line_inside_a_complete_file_is_an_error(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(GOOD + '{"case_id": "c2", "variant_name":\n' + GOOD)
    with pytest.raises(UnreadableRecordsError, match="results.jsonl: a record could not be read"):
        load_table(connect(), "r", path, RESULT_COLUMNS, "results.jsonl")


def test_a_torn_last_line_is_skipped_and_blank_lines_are_not_records(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(GOOD + "\n" + GOOD + '{"case_id": "c3", "vari')
    assert load_table(connect(), "r", path, RESULT_COLUMNS, "results.jsonl") == 2


def test_a_malformed_line_before_a_torn_tail_is_still_an_error(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(GOOD + "not json\n" + GOOD + '{"case_id": "c3", "vari')
    with pytest.raises(UnreadableRecordsError, match="1 of 3 records could not be read"):
        load_table(connect(), "r", path, RESULT_COLUMNS, "results.jsonl")
