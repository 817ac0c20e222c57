"""Promoted baselines: an atomic pointer, with replaced baselines kept in history."""

from __future__ import annotations

import json

import pytest

from evalh_pipeline.store import baselines
from evalh_pipeline.store.baselines import current_baseline, promote
from evalh_pipeline.store.run_dir import RunDirectory


def _finished_run(root, run_id, eval_name="toy"):
    run = RunDirectory(root / run_id)
    run.path.mkdir(parents=True)
    run.meta.write_text(json.dumps({"run_id": run_id, "eval_name": eval_name}))
    run.summary.write_text("run_id: x\n")
    return run


def test_promote_points_at_the_run_and_keeps_the_previous_in_history(tmp_path):
    first, second = _finished_run(tmp_path, "r1"), _finished_run(tmp_path, "r2")
    promote(first)
    promote(second)
    assert current_baseline(tmp_path, "toy").run_id == "r2"
    history = (tmp_path / "baselines" / "toy" / "history.jsonl").read_text().splitlines()
    assert [json.loads(line)["run_id"] for line in history] == ["r1"]


def test_a_crash_mid_promotion_leaves_the_old_baseline(tmp_path, monkeypatch):
    first, second = _finished_run(tmp_path, "r1"), _finished_run(tmp_path, "r2")
    promote(first)

    def crash(path, text):
        raise OSError("disk full")

    monkeypatch.setattr(baselines, "write_atomic", crash)
    with pytest.raises(OSError):
        promote(second)
    assert current_baseline(tmp_path, "toy").run_id == "r1"
    assert not list((tmp_path / "baselines" / "toy").glob(".*tmp"))


def test_an_unfinished_run_cannot_be_promoted(tmp_path):
    run = _finished_run(tmp_path, "r1")
    run.summary.unlink()
    with pytest.raises(ValueError, match="no summary.yaml"):
        promote(run)
    assert current_baseline(tmp_path, "toy") is None


def test_a_baseline_is_found_when_the_runs_folder_moved(tmp_path):
    import shutil

    promote(_finished_run(tmp_path / "old", "r1"))
    shutil.move(str(tmp_path / "old"), str(tmp_path / "new"))
    baseline = current_baseline(tmp_path / "new", "toy")
    assert baseline.locate(tmp_path / "new") == tmp_path / "new" / "r1"
