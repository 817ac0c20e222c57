"""A case's ``variants``: its cells on the other variants do not exist by design (no trace,
no result), and completeness, pass rates and the paired figures count only the cells that do."""

from __future__ import annotations

import asyncio
import json

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.config.dataset import select_cases
from evalh_pipeline.models import EvalCase
from evalh_pipeline.runner.cells import iter_cells, planned_cases
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.shards import Shard
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from tests.support.evals import STEADY_SYSTEMS, set_case_variants, write_eval


def test_a_case_without_variants_runs_on_every_variant_and_keeps_its_json():
    case = EvalCase(id="a")
    assert case.runs_on("base") and case.runs_on("anything")
    assert "variants" not in json.loads(case.model_dump_json())
    only = EvalCase(id="b", variants=["base"])
    assert only.runs_on("base") and not only.runs_on("candidate")
    assert json.loads(only.model_dump_json())["variants"] == ["base"]


def test_an_empty_variants_list_is_refused():
    with pytest.raises(ValueError, match="at least 1 item"):
        EvalCase(id="a", variants=[])


def test_an_unknown_variant_is_a_one_line_error_naming_file_line_key_and_allowed(tmp_path):
    path = write_eval(tmp_path / "toy", cases=3, systems=STEADY_SYSTEMS)
    set_case_variants(path, {2: ["base", "canddate"]})
    with pytest.raises(ConfigError) as caught:
        list(select_cases(load_eval(path), "r1"))
    assert str(caught.value) == ("cases.jsonl:3 variants[1]: unknown variant 'canddate': "
                                 "allowed are base, candidate")


def test_variants_that_is_not_a_list_is_a_one_line_error(tmp_path):
    path = write_eval(tmp_path / "toy", cases=2, systems=STEADY_SYSTEMS)
    set_case_variants(path, {1: "base"})
    with pytest.raises(ConfigError) as caught:
        list(select_cases(load_eval(path), "r1"))
    assert len(caught.value.issues) == 1
    assert str(caught.value).startswith("cases.jsonl:2 variants: Input should be a valid list")


def test_the_cell_plan_leaves_out_exactly_the_excluded_cells(tmp_path):
    path = write_eval(tmp_path / "toy", cases=3, systems=STEADY_SYSTEMS)
    set_case_variants(path, {1: ["candidate"]})
    spec = load_eval(path)
    info = prepare_cases(spec, "r1")
    cells = [c.key for c in iter_cells(info.run_dir.cases, spec.variants, 2)]
    assert ("case_1", "base", 0) not in cells and ("case_1", "base", 1) not in cells
    assert len(cells) == (3 * 2 - 1) * 2
    assert planned_cases(info.run_dir.cases, ["base", "candidate"]) == {"base": 2, "candidate": 3}
    # A shard plans the cells of the cases it holds (positions 1 of 0, 1, 2 for shard 2 of 2).
    second = Shard(1, 2)
    assert planned_cases(info.run_dir.cases, ["base", "candidate"], second) == {"base": 0, "candidate": 1}
    assert [c.key for c in iter_cells(info.run_dir.cases, spec.variants, 1, shard=second)] == [
        ("case_1", "candidate", 0)]


def test_a_run_traces_and_judges_only_planned_cells_and_is_complete(tmp_path):
    path = write_eval(tmp_path / "toy", cases=3, systems=STEADY_SYSTEMS)
    set_case_variants(path, {0: ["base"]})
    spec = load_eval(path)
    info = prepare_cases(spec, "r1")
    stats = asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    summary = write_summary(spec, info.run_dir)

    assert stats.cells_total == 5
    traced = {(t["case_id"], t["variant_name"]) for t in map(json.loads, info.run_dir.traces.read_text().splitlines())}
    judged = {(r["case_id"], r["variant_name"]) for r in map(json.loads, info.run_dir.results.read_text().splitlines())}
    assert ("case_0", "candidate") not in traced | judged and len(traced) == 5 and judged == traced
    assert summary.completeness is not None and summary.completeness.complete
    assert (summary.completeness.expected_cells, summary.completeness.present_cells) == (5, 5)
    by_name = {v.name: v for v in summary.variants}
    assert (by_name["base"].cases_total, by_name["candidate"].cases_total) == (3, 2)
    assert by_name["candidate"].cases_passed == 2 and by_name["candidate"].cases_errored == 0


def test_reuse_copies_no_trace_of_a_cell_the_case_no_longer_runs(tmp_path):
    path = write_eval(tmp_path / "toy", cases=3, systems=STEADY_SYSTEMS)
    spec = load_eval(path)
    before = prepare_cases(spec, "r1").run_dir
    asyncio.run(produce_traces(spec, before))
    set_case_variants(path, {0: ["base"]})
    spec = load_eval(path)
    after = prepare_cases(spec, "r2").run_dir
    stats = asyncio.run(produce_traces(spec, after, reuse_from=before))

    assert stats.cells_reused == 5 and stats.cells_total == 5
    traced = {(t["case_id"], t["variant_name"]) for t in map(json.loads, after.traces.read_text().splitlines())}
    assert ("case_0", "candidate") not in traced and len(traced) == 5
