"""Item 1: ``run --resume DIR`` works on DIR itself, also outside the eval's runs folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.evalh_process import run_evalh

from tests.support.evals import write_eval


def _runs(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if not p.name.startswith(".")] if folder.exists() else []


@pytest.mark.e2e
def test_resume_finishes_the_named_directory_without_recalling_cells(tmp_path: Path, env: dict[str, str]) -> None:
    path = write_eval(tmp_path / "toy", cases=4)
    done = run_evalh(["run", str(path)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    (original,) = _runs(path.parent / "runs")
    # The run, unfinished (two cells never ran), moved out of the eval's runs folder.
    moved = tmp_path / "archive" / original.name
    moved.parent.mkdir()
    shutil.move(original, moved)
    lines = (moved / "traces.jsonl").read_text().splitlines(keepends=True)
    (moved / "traces.jsonl").write_text("".join(lines[:-2]))
    for name in ("results.jsonl", "summary.yaml", "report.md"):
        (moved / name).unlink()
    missing = {(json.loads(line)["case_id"], json.loads(line)["variant_name"]) for line in lines[-2:]}
    calls = Path(env["EVALH_TEST_CALL_LOG"])
    calls.write_text("")

    resumed = run_evalh(["run", str(path), "--resume", str(moved)], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert _runs(path.parent / "runs") == []  # no new run of the same id in runs/
    called = {tuple(json.loads(line)) for line in calls.read_text().splitlines()}
    assert called == missing  # only the cells without a trace were called again
    assert len((moved / "traces.jsonl").read_text().splitlines()) == 8
    summary = yaml.safe_load((moved / "summary.yaml").read_text())
    assert sum(v["cases_total"] for v in summary["variants"]) == 8
    assert str(moved) in resumed.stdout.replace("\n", "")  # rich wraps long paths


@pytest.mark.e2e
def test_reevaluate_of_a_moved_run_writes_results_there(tmp_path: Path, env: dict[str, str]) -> None:
    path = write_eval(tmp_path / "toy", cases=3)
    assert run_evalh(["run", str(path)], env, tmp_path).returncode == 0
    (original,) = _runs(path.parent / "runs")
    copy = tmp_path / "copy" / original.name
    shutil.copytree(original, copy)
    (copy / "results.jsonl").unlink()
    (original / "results.jsonl").unlink()  # untouched by a re-evaluation of the copy

    done = run_evalh(["re-evaluate", str(copy)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (copy / "results.jsonl").exists()
    assert not (original / "results.jsonl").exists()
