"""Copying the results kept outside a re-judged slice: exactly the lines of other slices, in order."""

from __future__ import annotations

import io
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from evalh_pipeline.store import results_file
from evalh_pipeline.store.records import RESULTS
from evalh_pipeline.store.run_dir import RunDirectory

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)


def _line(case: str, variant: str, evaluator: str, detail: dict | None = None) -> bytes:
    return RESULTS.encode_values({
        "run_id": "r", "case_id": case, "variant_name": variant, "sample": 0, "evaluator": evaluator,
        "evaluator_type": "latency_under", "passed": True, "score": 1.0, "reason": "ok", "detail": detail or {},
        "started_at": T0, "finished_at": T0, "latency_ms": 0,
    })


@pytest.mark.parametrize("chunk", [results_file.CHUNK_BYTES, 1000, 97])  # lines across reads, longer than one
def test_the_kept_lines_are_those_outside_the_slice_even_when_a_detail_names_it(tmp_path: Path, monkeypatch, chunk):
    monkeypatch.setattr(results_file, "CHUNK_BYTES", chunk)
    lines = []
    for i in range(300):
        for variant in ("base", "candidate"):
            lines.append(_line(f"c{i}", variant, "says"))
            # A detail that spells the re-judged evaluator's key as the writer lays it out.
            lines.append(_line(f"c{i}", variant, "other", {"x": 1, "evaluator": "fast", "evaluator_type": "y"}))
            lines.append(_line(f"c{i}", variant, "fast"))
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"".join(lines))
    known = {(v, e) for v in ("base", "candidate") for e in ("says", "other", "fast")}
    expected = b"".join(line for line in lines if b'"evaluator":"fast","evaluator_type":"latency_under"' not in line)
    for evaluators, slices in (({"fast"}, known), ({"fast"}, None), (None, known)):
        out = io.BytesIO()
        kept = results_file._copy_outside_slice(path, out, {"candidate"} if evaluators is None else {"base", "candidate"},
                                                evaluators, slices)
        if evaluators is None:  # every evaluator of one variant
            assert out.getvalue() == b"".join(line for line in lines if b'"variant_name":"base"' in line)
            assert kept == {("base", "says"), ("base", "other"), ("base", "fast")}
        else:
            assert out.getvalue() == expected
            assert kept == {(v, e) for v in ("base", "candidate") for e in ("says", "other")}


def _open_deleted_files() -> list[str]:
    """What this process holds open of files that no longer have a name (Linux's /proc)."""
    fds = Path("/proc/self/fd")
    found = []
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # the listing's own descriptor, closed meanwhile
        if target.endswith(" (deleted)"):
            found.append(target)
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux's /proc to see open descriptors")
def test_the_replaced_results_file_leaves_no_name_behind_and_is_freed(tmp_path: Path):
    run_dir = RunDirectory(tmp_path / "run")
    run_dir.path.mkdir()
    run_dir.results.write_bytes(b"".join(_line(f"c{i}", "base", "fast") for i in range(1000)))
    old = run_dir.results.stat().st_ino
    part = tmp_path / "part.jsonl"
    new = b"".join(_line(f"c{i}", "base", "fast", {"new": True}) for i in range(1000))
    part.write_bytes(new)

    results_file.replace_results(run_dir, [("fast", part)], {"base"}, {"fast"})

    # The old file is gone from the folder at once: no other name of it, no temp file.
    assert sorted(p.name for p in run_dir.path.iterdir()) == [".lock", "results.jsonl"]
    assert run_dir.results.stat().st_ino != old
    assert run_dir.results.read_bytes() == new
    results_file.settle_releases()
    assert not [name for name in _open_deleted_files() if "results" in name]  # and freed by now
