"""An eval's label file at its s3:// output (moto's S3 server on loopback): labels added from two
machines at the same time all stay, and a stale write is refused by the store itself."""

from __future__ import annotations

import errno
import threading
import uuid
from datetime import datetime, timezone

import pytest

from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.store.labels import labels_path, read_labels
from evalh_pipeline.outputs.published_labels import append_published_labels, published_labels_url

pytestmark = pytest.mark.integration

PER_MACHINE = 5


def label(machine: str, number: int) -> HumanLabel:
    return HumanLabel(content_hash=f"{machine}{number:04d}", evaluator="mentions_paris", evaluator_hash="h1",
                      passed=number % 2 == 0, labeller=machine, labelled_at=datetime.now(timezone.utc),
                      case_id=f"case_{number}", variant_name="base", run_id="r1")


@pytest.fixture
def output(s3_server, monkeypatch) -> str:
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return f"{s3_server.make_bucket(f'labels-{uuid.uuid4().hex[:8]}')}/runs"


def test_labels_added_on_two_machines_at_once_all_stay(tmp_path, output, s3_server):
    # Each machine adds one label at a time, as a reviewer does; a write loses only to the
    # other machine's success, so each of its labels is in after at most PER_MACHINE tries.
    def machine(name: str) -> None:
        for number in range(PER_MACHINE):
            append_published_labels(output, tmp_path / name, "toy", [label(name, number)])

    threads = [threading.Thread(target=machine, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    text = s3_server.filesystem().cat(published_labels_url(output, "toy")).decode()
    assert len(text.splitlines()) == 2 * PER_MACHINE
    copy = tmp_path / "check"
    labels_path(copy, "toy").parent.mkdir(parents=True)
    labels_path(copy, "toy").write_text(text)
    assert {k[0] for k in read_labels(copy, "toy")} == {f"{m}{n:04d}" for m in "ab" for n in range(PER_MACHINE)}
    # Each machine's copy is the file as it was after its own last write: a prefix of the URL's.
    assert all(text.startswith(labels_path(tmp_path / m, "toy").read_text()) for m in "ab")


def test_a_write_over_a_file_changed_since_it_was_read_is_refused_by_s3(output, s3_server):
    # What append_published_labels relies on: s3fs turns S3's 412 into these errors.
    fs = s3_server.filesystem()
    key = published_labels_url(output, "toy")
    fs.pipe_file(key, b"first\n")
    stale = fs.info(key)["ETag"]
    fs.pipe_file(key, b"first\nsecond\n")
    with pytest.raises(OSError) as refused:
        fs.pipe_file(key, b"first\nmine\n", IfMatch=stale)
    assert refused.value.errno == errno.EINVAL
    with pytest.raises(FileExistsError):
        fs.pipe_file(key, b"mine\n", IfNoneMatch="*")
    assert fs.cat(key) == b"first\nsecond\n"
