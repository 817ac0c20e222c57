"""The eval's label store: append-only lines, the latest label of a key wins, a torn last
line is set aside, a damaged line is named by file and line."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.store.jsonl import CorruptRecordError
from evalh_pipeline.store.labels import append_labels, labels_path, read_labels


def _label(passed: bool, content: str = "c1", note: str | None = None) -> HumanLabel:
    return HumanLabel(content_hash=content, evaluator="judge", evaluator_hash="e1", passed=passed, labeller="ana",
                      labelled_at=datetime(2026, 1, 1, tzinfo=timezone.utc), note=note, case_id="case_1",
                      variant_name="base", run_id="r1")


def test_labels_are_appended_and_the_latest_of_a_key_wins(tmp_path):
    assert append_labels(tmp_path, "toy", [_label(True), _label(False, "c2")]) == 2
    assert append_labels(tmp_path, "toy", [_label(False, note="second look")]) == 1
    path = labels_path(tmp_path, "toy")
    assert path == tmp_path / "labels" / "toy" / "labels.jsonl"
    assert len(path.read_text().splitlines()) == 3
    labels = read_labels(tmp_path, "toy")
    assert labels[("c1", "judge", "e1")].passed is False
    assert labels[("c1", "judge", "e1")].note == "second look"
    assert labels[("c2", "judge", "e1")].passed is False


def test_a_torn_last_line_is_set_aside_on_the_next_append(tmp_path):
    append_labels(tmp_path, "toy", [_label(True)])
    path = labels_path(tmp_path, "toy")
    with path.open("a") as f:
        f.write('{"content_hash": "c9", "evalu')
    assert len(read_labels(tmp_path, "toy")) == 1  # the torn line is not read
    append_labels(tmp_path, "toy", [_label(False, "c2")])
    assert set(read_labels(tmp_path, "toy")) == {("c1", "judge", "e1"), ("c2", "judge", "e1")}
    assert path.with_name("labels.jsonl.torn").read_text().startswith('{"content_hash": "c9"')


def test_a_damaged_line_is_named_by_file_and_line(tmp_path):
    append_labels(tmp_path, "toy", [_label(True)])
    path = labels_path(tmp_path, "toy")
    with path.open("a") as f:
        f.write('{"content_hash": "c2"}\n')
    with pytest.raises(CorruptRecordError, match=rf"{path}:2: not a label"):
        read_labels(tmp_path, "toy")
