"""Shards of the traces stage (runner/shards.py): the plan, the part files, resume, collect."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from evalh_pipeline.config.schema import RunConfig
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.shards import (
    Layout,
    Shard,
    all_shards,
    choose_layout,
    collect_traces,
    cpu_bound,
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
    ("auto", "auto", 1_000_000, 1),  # launched without `evalh run` choosing: in process
    ("auto", "multiprocess", 10, 1),
])
def test_shard_count_is_the_configured_one_or_auto(shards, executor, cells, expected):
    run = RunConfig.model_validate({"shards": shards, "executor": {"type": executor}})
    assert shard_count(run, cells) == expected


def _layout(run: dict, cells: int, cores: int = 2, in_process: bool = True) -> Layout:
    return choose_layout(RunConfig.model_validate(run), cells, cores=cores, cpu_bound=in_process)


def test_auto_spreads_a_large_cpu_bound_run_over_the_cores():
    assert _layout({"cells_per_shard": 100}, 200) == Layout("multiprocess", 2)
    assert _layout({"cells_per_shard": 100}, 1_000, cores=4) == Layout("multiprocess", 4)
    assert _layout({"cells_per_shard": 100}, 350, cores=8) == Layout("multiprocess", 3)
    assert _layout({}, 2 * RunConfig().cells_per_shard) == Layout("multiprocess", 2)  # the measured default


def test_auto_keeps_a_small_run_one_shard_in_process():
    assert _layout({"cells_per_shard": 100}, 199) == Layout("in_process", 1)
    assert _layout({}, 1) == Layout("in_process", 1)
    assert _layout({}, 2 * RunConfig().cells_per_shard - 1) == Layout("in_process", 1)


def test_auto_stays_in_process_on_one_core_or_for_systems_elsewhere():
    assert _layout({"cells_per_shard": 100}, 10_000, cores=1) == Layout("in_process", 1)
    assert _layout({"cells_per_shard": 100}, 10_000, in_process=False) == Layout("in_process", 1)


def test_what_the_user_sets_wins_over_auto():
    # --shards 1 is one process, whatever the size.
    assert _layout({"shards": 1, "cells_per_shard": 1}, 10_000) == Layout("in_process", 1)
    # Shards asked for run side by side when the executor is left to evalh, and there are cores.
    assert _layout({"shards": 3}, 10) == Layout("multiprocess", 3)
    assert _layout({"shards": 3}, 10, cores=1) == Layout("in_process", 3)
    # An executor named keeps its type: in process it is one shard, elsewhere auto shards.
    assert _layout({"executor": {"type": "local"}, "cells_per_shard": 1}, 10_000) == Layout("local", 1)
    assert _layout({"executor": {"type": "in_process"}, "shards": 2}, 10) == Layout("in_process", 2)
    assert _layout({"executor": {"type": "multiprocess"}, "cells_per_shard": 100}, 150) == Layout("multiprocess", 2)
    assert _layout({"executor": {"type": "celery"}, "shards": 1}, 10_000) == Layout("celery", 1)


def test_only_systems_that_run_in_the_process_are_cpu_bound(tmp_path):
    spec = load_eval(write_eval(tmp_path / "toy"))
    assert cpu_bound(spec)
    isolated = tmp_path / "isolated"
    path = write_eval(isolated)
    path.write_text(path.read_text().replace("adapter: python_function", "adapter: python_function\n    isolation: process", 1))
    assert not cpu_bound(load_eval(path))
    served = write_eval(tmp_path / "served", systems="""
  - name: base
    adapter: http
    endpoint: http://127.0.0.1:9/answer
  - name: candidate
    adapter: python_function
    target: stub_agent:run
""")
    assert not cpu_bound(load_eval(served))


def test_a_run_from_before_shards_is_one_shard(tmp_path):
    run_dir = RunDirectory(tmp_path / "old")
    run_dir.path.mkdir()
    run_dir.meta.write_text(json.dumps({"run_id": "old", "eval_name": "toy"}))
    assert recorded_shards(run_dir) == [Shard()]
