"""JSON Lines: a torn last line is skipped by readers and set aside (never destroyed) by the next writer."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from evalh_pipeline.models import SchemaVersionError, Trace
from evalh_pipeline.models import versioning
from evalh_pipeline.store import jsonl
from evalh_pipeline.store.jsonl import (
    CorruptRecordError,
    JsonlAppender,
    complete_lines_digest,
    iter_lines,
    iter_records,
    set_aside_torn_tail,
)

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace_line(case_id: str, **extra) -> str:
    trace = Trace(run_id="r", case_id=case_id, variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=1)
    return json.dumps({**json.loads(trace.model_dump_json()), **extra})


def test_iter_lines_yields_complete_lines_with_1_based_numbers_skipping_blanks(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n\n{"b": 2}\n')
    assert list(iter_lines(path)) == [(1, '{"a": 1}\n'), (3, '{"b": 2}\n')]


def test_iter_lines_skips_a_torn_last_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n{"c": 3')
    assert [n for n, _ in iter_lines(path)] == [1, 2]


def test_iter_lines_of_a_missing_file_is_empty(tmp_path):
    assert list(iter_lines(tmp_path / "absent.jsonl")) == []


def test_iter_lines_skips_a_torn_last_line_cut_inside_a_multibyte_character(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes('{"a": "Zürich"}\n{"b": "Zü'.encode()[:-1])
    assert [n for n, _ in iter_lines(path)] == [1]


def test_appender_sets_a_torn_tail_aside_before_writing_and_says_so_once(tmp_path, caplog):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n{"c": 3')
    with JsonlAppender(path) as out:
        out.write('{"d": 4}')
    assert path.read_text() == '{"a": 1}\n{"b": 2}\n{"d": 4}\n'
    assert (tmp_path / "t.jsonl.torn").read_text() == '{"c": 3\n'
    assert [r.getMessage() for r in caplog.records if "torn" in r.getMessage()] and "t.jsonl.torn" in caplog.text
    caplog.clear()
    JsonlAppender(path).close()  # nothing torn any more: nothing said, nothing moved
    assert "torn" not in caplog.text and (tmp_path / "t.jsonl.torn").read_text() == '{"c": 3\n'


def test_torn_tails_accumulate_in_the_torn_file_never_overwritten(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n{"first')
    set_aside_torn_tail(path)
    path.write_text(path.read_text() + '{"second')
    set_aside_torn_tail(path)
    assert (tmp_path / "t.jsonl.torn").read_text() == '{"first\n{"second\n'
    assert path.read_text() == '{"a": 1}\n'


def test_appender_sets_aside_a_file_that_holds_only_a_torn_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"partial": ')
    JsonlAppender(path).close()
    assert path.read_bytes() == b""
    assert (tmp_path / "t.jsonl.torn").read_text() == '{"partial": \n'


def test_a_torn_tail_cut_inside_a_multibyte_character_is_set_aside_byte_for_byte(tmp_path):
    path = tmp_path / "t.jsonl"
    torn = '{"b": "Zü'.encode()[:-1]
    path.write_bytes('{"a": "Zürich"}\n'.encode() + torn)
    assert set_aside_torn_tail(path) == tmp_path / "t.jsonl.torn"
    assert path.read_text(encoding="utf-8") == '{"a": "Zürich"}\n'
    assert (tmp_path / "t.jsonl.torn").read_bytes() == torn + b"\n"


def test_the_digest_of_complete_lines_ignores_a_torn_tail_and_nothing_else(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n')
    whole = complete_lines_digest(path)
    path.write_text('{"a": 1}\n{"b": 2}\n{"c": ')
    assert complete_lines_digest(path) == whole
    path.write_text('{"a": 1}\n{"b": 3}\n')
    assert complete_lines_digest(path) != whole
    assert complete_lines_digest(tmp_path / "absent.jsonl") == ""


def test_appender_keeps_complete_files_and_creates_missing_ones(tmp_path):
    existing = tmp_path / "t.jsonl"
    existing.write_text('{"a": 1}\n')
    with JsonlAppender(existing) as out:
        out.write('{"b": 2}')
    assert existing.read_text() == '{"a": 1}\n{"b": 2}\n'
    fresh = tmp_path / "new.jsonl"
    with JsonlAppender(fresh) as out:
        out.write("{}")
    assert fresh.read_text() == "{}\n"


def test_iter_records_validates_records_and_skips_the_torn_tail(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text(trace_line("a") + "\n" + trace_line("b") + "\n" + trace_line("c")[:20])
    assert [t.case_id for t in iter_records(path, Trace, "trace")] == ["a", "b"]


def test_iter_records_loads_newer_1x_records_keeping_unknown_fields(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text(trace_line("a", schema_version="1.3", span_id="s-1") + "\n")
    (trace,) = iter_records(path, Trace, "trace")
    assert trace.schema_version == "1.3" and trace.model_extra == {"span_id": "s-1"}


def test_iter_records_migrates_records_older_than_the_running_version(tmp_path, monkeypatch):
    # Pretend this release writes 1.1 and knows how to upgrade 1.0 records.
    monkeypatch.setattr(versioning, "SCHEMA_VERSION", "1.1")
    monkeypatch.setattr(jsonl, "SCHEMA_VERSION", "1.1", raising=False)
    monkeypatch.setitem(versioning._MIGRATIONS, ("trace", "1.0"),
                        lambda r: {**r, "schema_version": "1.1", "extra": {"migrated": True}})
    path = tmp_path / "traces.jsonl"
    path.write_text(trace_line("a") + "\n")
    (trace,) = iter_records(path, Trace, "trace")
    assert trace.schema_version == "1.1" and trace.extra == {"migrated": True}


def test_iter_records_refuses_major_2_naming_file_and_line(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text(trace_line("a") + "\n" + trace_line("b", schema_version="2.0") + "\n")
    records = iter_records(path, Trace, "trace")
    assert next(records).case_id == "a"
    with pytest.raises(SchemaVersionError, match=r"^traces.jsonl:2 has schema_version '2.0'"):
        next(records)


def test_iter_records_reports_a_corrupt_complete_line(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text(trace_line("a") + "\n{not json}\n")
    with pytest.raises(CorruptRecordError, match=r"traces.jsonl:2: not JSON"):
        list(iter_records(path, Trace, "trace"))


@pytest.mark.parametrize("block", [1 << 23, 7])
def test_count_lines_counts_what_iter_lines_yields(tmp_path, monkeypatch, block):
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b'{"a": 1}\n\n  \n\x0c\n{"b": 2}\r\n' + b'{"c": 3}\n' * 5 + b'{"torn')
    real_open = type(path).open

    def small_reads(self, *args, **kwargs):  # blocks that end inside lines
        handle = real_open(self, *args, **kwargs)
        read = handle.read
        handle.read = lambda n=-1: read(min(n, block) if n > 0 else n)
        return handle

    monkeypatch.setattr(type(path), "open", small_reads)
    assert jsonl.count_lines(path) == len(list(iter_lines(path))) == 7
    assert jsonl.count_lines(tmp_path / "missing.jsonl") == 0


def test_appender_buffers_lines_until_flushed_then_hands_them_over_whole(tmp_path):
    path = tmp_path / "t.jsonl"
    with JsonlAppender(path) as out:
        out.write('{"a": 1}')
        assert path.read_bytes() == b""  # buffered: a kill now loses it, never tears it
        out.flush()
        assert path.read_bytes() == b'{"a": 1}\n'
        out.write('{"b": 2}')
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'  # close flushes


def test_appender_flushes_by_itself_once_its_buffer_is_full(tmp_path):
    path = tmp_path / "t.jsonl"
    with JsonlAppender(path, buffer_bytes=20) as out:
        out.write('{"a": 1}')
        assert path.read_bytes() == b""
        out.write('{"b": 22222}')
        assert path.read_bytes() == b'{"a": 1}\n{"b": 22222}\n'


@pytest.mark.parametrize("before", ["", '{"old": 1}\n', '{"old": 1}\n{"torn": '])
def test_appender_digest_is_that_of_the_files_complete_lines(tmp_path, before):
    path = tmp_path / "t.jsonl"
    if before:
        path.write_text(before)
    out = JsonlAppender(path, keep_digest=True, buffer_bytes=30)
    for i in range(10):
        out.write(json.dumps({"i": i, "text": "é" * i}))
    out.close()
    assert out.digest == complete_lines_digest(path)
    plain = JsonlAppender(path)
    plain.close()
    assert plain.digest == ""  # not asked to keep one


@pytest.mark.parametrize(("before", "found"), [("", 0), ('{"old": 1}\n\n{"old": 2}\n', 3), ('{"old": 1}\n{"torn": ', 1)])
def test_appender_counts_the_complete_lines_it_found_as_line_numbers_do(tmp_path, before, found):
    path = tmp_path / "t.jsonl"
    path.write_text(before)
    with JsonlAppender(path, keep_digest=True) as out:
        assert out.lines_found == found  # blank lines counted, the torn tail set aside
        out.write('{"new": 1}')
    assert [number for number, line in iter_lines(path) if "new" in line] == [found + 1]
    with JsonlAppender(path) as plain:
        assert plain.lines_found is None  # not asked to keep a digest


def test_a_failed_write_is_raised_again_and_leaves_no_digest(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    out = JsonlAppender(path, keep_digest=True)
    out.write('{"a": 1}')

    def full_disk(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jsonl.os, "write", full_disk)
    with pytest.raises(OSError, match="No space"):
        out.flush()
    monkeypatch.undo()
    assert out.digest == ""
    with pytest.raises(OSError, match="an earlier write failed"):
        out.write('{"b": 2}')
    with pytest.raises(OSError, match="an earlier write failed"):
        out.close()
    out.close()  # closed once: nothing more to do
