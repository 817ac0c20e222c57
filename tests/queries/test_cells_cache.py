"""The summary's cells cache: used by compare while fresh, never when the JSONL or the criteria changed."""

from __future__ import annotations

import os

import evalh_pipeline.queries.cells as cells_module
from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.queries.cells import cells_cache_path, run_pass_criteria
from evalh_pipeline.queries.compare import compare_runs
from evalh_pipeline.queries.summary import summarize_run
from tests.queries.test_compare import A_CELLS, A_RESULTS, _results, _run


def _summarize(run_dir, criteria=None):
    summarize_run(run_dir, variant_order=["a", "b"], pass_criteria=criteria or PassCriteria(),
                  baseline_variant="a", config_path="eval.yaml", config_hash="h", cases_total=3)


def _refuse_jsonl(*args, **kwargs):
    raise AssertionError("the JSONL was read")


def test_compare_answers_from_fresh_caches_without_reading_the_jsonl(tmp_path, monkeypatch):
    a = _run(tmp_path, "A", A_CELLS, A_RESULTS)
    b = _run(tmp_path, "B", A_CELLS, _results({("c1", "a"): {"x": "fail"}, ("c2", "a"): {"x": "pass"},
                                               ("c3", "a"): {"x": "fail"}, ("c1", "b"): {"x": "pass"},
                                               ("c2", "b"): {"x": "fail"}, ("c3", "b"): {"x": "fail"}}))
    expected = compare_runs(a, b)  # from the JSONL: no caches yet
    for run in (a, b):
        _summarize(run)
        assert cells_cache_path(run, run_pass_criteria(run)).exists()

    monkeypatch.setattr(cells_module, "load_table", _refuse_jsonl)  # only the caches can answer now
    cached = compare_runs(a, b)

    assert cached == expected
    assert cached.comparison.deltas[0].regressions == ["c1"]


def test_a_changed_jsonl_makes_the_cache_stale(tmp_path):
    a = _run(tmp_path, "A", A_CELLS, A_RESULTS)
    b = _run(tmp_path, "B", A_CELLS, A_RESULTS)
    _summarize(a)
    _summarize(b)
    stale = cells_cache_path(b, run_pass_criteria(b))
    # c1 on `a` now fails in B: the line is appended, so the file's size and mtime change.
    lines = b.results.read_text().splitlines(keepends=True)
    b.results.write_text("".join(line.replace('"passed": true', '"passed": false') if '"c1"' in line
                                 and '"variant_name": "a"' in line else line for line in lines) + "\n")
    os.utime(b.results, ns=(1, 1))

    assert cells_cache_path(b, run_pass_criteria(b)) != stale
    assert compare_runs(a, b).comparison.deltas[0].regressions == ["c1"]


def test_a_cache_made_under_other_pass_criteria_is_not_used(tmp_path):
    outcomes = {("c1", "a"): {"x": "pass", "y": "fail"}, ("c2", "a"): {"x": "fail", "y": "pass"}}
    cells = {("c1", "a"): (100, None), ("c2", "a"): (100, None)}
    a = _run(tmp_path, "A", cells, _results(outcomes), variants=("a",))
    b = _run(tmp_path, "B", cells, _results(outcomes), {"all_required": ["x"]}, variants=("a",))
    _summarize(b)  # cached under the default criteria, but B's snapshot requires only `x`

    assert not cells_cache_path(b, run_pass_criteria(b)).exists()
    (delta,) = compare_runs(a, b).comparison.deltas
    assert delta.improvements == ["c1"]


def test_only_the_latest_cache_is_kept(tmp_path):
    run = _run(tmp_path, "A", A_CELLS, A_RESULTS)
    _summarize(run)
    _summarize(run, PassCriteria(all_required=["x"]))
    (kept,) = (run.path / ".cells").glob("*.parquet")
    assert kept == cells_cache_path(run, PassCriteria(all_required=["x"]))
