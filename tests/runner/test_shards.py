"""Shards of the traces stage (runner/shards.py): the plan, the part files, resume, collect."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from evalh_pipeline.config.schema import RunConfig
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.shards import (
    Shard,
    all_shards,
    collect_traces,
    done_cells,
    part_path,
    recorded_shards,
    shard_count,
    trace_parts,
)
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.jsonl import complete_lines_digest
from evalh_pipeline.store.run_dir import RunDirectory, new_run_id
from tests.support.evals import write_eval


def _run(tmp_path: Path, shards: int, cases: int = 10) -> tuple:
    path = write_eval(tmp_path / "toy", cases=cases)
    path.write_text(path.read_text().replace("  baseline_variant: base\n", f"  baseline_variant: base\n  shards: {shards}\n"))
    spec = load_eval(path)
    return spec, prepare_cases(spec, new_run_id(spec.name)).run_dir


def _keys(path: Path) -> list[tuple[str, str, int]]:
    return [(t["case_id"], t["variant_name"], t["sample"]) for t in map(json.loads, path.read_text().splitlines())]


def test_plan_deals_cases_round_robin_and_keeps_a_cases_cells_together(tmp_path):
    spec, run_dir = _run(tmp_path, shards=3)
    assert recorded_shards(run_dir) == all_shards(3)
    for shard in all_shards(3):
        asyncio.run(produce_traces(spec, run_dir, shard=shard))
    held = {shard.label: {case for case, _, _ in _keys(part_path(run_dir, shard))} for shard in all_shards(3)}
    assert held == {"1-of-3": {"case_0", "case_3", "case_6", "case_9"}, "2-of-3": {"case_1", "case_4", "case_7"},
                    "3-of-3": {"case_2", "case_5", "case_8"}}
    assert not run_dir.traces.exists() or not run_dir.traces.read_text()  # nothing in the contract file yet


def test_one_shard_writes_traces_jsonl_itself_with_no_part_file(tmp_path):
    spec, run_dir = _run(tmp_path, shards=1)
    stats = asyncio.run(produce_traces(spec, run_dir, shard=Shard()))
    assert stats.cells_run == 20
    assert stats.traces_digest == complete_lines_digest(run_dir.traces)
    assert trace_parts(run_dir) == [] and not (run_dir.path / "shards").exists()
    assert collect_traces(run_dir) is None
    assert {t["extra"]["executor"]["shard"] for t in map(json.loads, run_dir.traces.read_text().splitlines())} \
        == {"1-of-1"}


def test_resume_counts_the_cells_in_parts_not_collected_yet(tmp_path):
    spec, run_dir = _run(tmp_path, shards=2)
    first = asyncio.run(produce_traces(spec, run_dir, shard=Shard(0, 2)))
    assert first.cells_total == first.cells_run == 10
    assert len(done_cells(run_dir, {"base", "candidate"})) == 10
    again = asyncio.run(produce_traces(spec, run_dir, shard=Shard(0, 2)))
    assert again.cells_run == 0 and again.cells_skipped == 10
    other = asyncio.run(produce_traces(spec, run_dir, shard=Shard(1, 2)))
    assert other.cells_run == 10 and other.cells_skipped == 0


def test_collect_repeated_after_a_crash_never_duplicates_a_cell(tmp_path):
    spec, run_dir = _run(tmp_path, shards=2)
    for shard in all_shards(2):
        asyncio.run(produce_traces(spec, run_dir, shard=shard))
    first_part = part_path(run_dir, Shard(0, 2))
    # A collect killed after it appended half of the first part, before it removed any part.
    lines = first_part.read_bytes().splitlines(keepends=True)
    run_dir.traces.write_bytes(b"".join(lines[:5]))
    digest = collect_traces(run_dir)
    keys = _keys(run_dir.traces)
    assert len(keys) == len(set(keys)) == 20
    assert digest == complete_lines_digest(run_dir.traces)
    assert trace_parts(run_dir) == [] and not (run_dir.path / "shards").exists()
    assert collect_traces(run_dir) is None  # nothing left to collect: traces.jsonl is as it was
    assert len(_keys(run_dir.traces)) == 20


def test_a_parts_torn_tail_is_set_aside_and_its_cell_left_to_a_resume(tmp_path):
    spec, run_dir = _run(tmp_path, shards=2)
    for shard in all_shards(2):
        asyncio.run(produce_traces(spec, run_dir, shard=shard))
    part = part_path(run_dir, Shard(1, 2))
    part.write_bytes(part.read_bytes()[:-20])  # a shard killed mid-line
    collect_traces(run_dir)
    assert len(_keys(run_dir.traces)) == 19
    assert (part.parent / (part.name + ".torn")).exists()
    resumed = asyncio.run(produce_traces(spec, run_dir, shard=Shard(1, 2)))
    assert resumed.cells_run == 1
    collect_traces(run_dir)
    keys = _keys(run_dir.traces)
    assert len(keys) == len(set(keys)) == 20


@pytest.mark.parametrize(("shards", "executor", "cells", "expected"), [
    (3, "local", 10, 3),
    ("auto", "local", 1_000_000, 1),
    ("auto", "multiprocess", 10, 1),
])
def test_shard_count_is_the_configured_one_or_auto(shards, executor, cells, expected):
    run = RunConfig.model_validate({"shards": shards, "executor": {"type": executor}})
    assert shard_count(run, cells) == expected


def test_a_run_from_before_shards_is_one_shard(tmp_path):
    run_dir = RunDirectory(tmp_path / "old")
    run_dir.path.mkdir()
    run_dir.meta.write_text(json.dumps({"run_id": "old", "eval_name": "toy"}))
    assert recorded_shards(run_dir) == [Shard()]
