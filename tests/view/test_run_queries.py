"""The viewer's run queries agree with the run's summary: the same figures, the same statistics.

The run page shows this project's summary.yaml as it is, and computes the same tables with
queries/view_run.py where a run has none (eval-harness's folders); both must say the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.queries.summary import summarize_run
from evalh_pipeline.queries.view_run import MatrixFilter, RunCells
from evalh_pipeline.store.run_dir import RunDirectory
from tests.view.support import eval_harness_run, reference


@pytest.fixture
def run(tmp_path: Path) -> RunDirectory:
    """The compat eval's run made this project's own (run.json added), with its cell store."""
    folder = eval_harness_run(tmp_path / "runs", "2026-05-01T10-00-00-000000_regressions")
    (folder / "run.json").write_text(json.dumps({"run_id": folder.name, "eval_name": "regressions",
                                                 "variants": ["main", "candidate"]}))
    return RunDirectory(folder)


def test_the_figures_and_statistics_are_the_summarys(run):
    summary = summarize_run(run, variant_order=["main", "candidate"],
                            pass_criteria=PassCriteria(all_required=["lookup"],
                                                       any_required=["mentions_suburb", "price_fact"]),
                            baseline_variant="main", config_path="eval.yaml", config_hash="h")
    with RunCells(run) as cells:
        variants = cells.variants(["main", "candidate"])
        evaluators = cells.evaluators()
        pair = cells.compare_variants("main", "candidate")
    assert [(v.name, v.cases_total, v.cases_passed, v.cases_errored) for v in variants] == [
        (v.name, v.cases_total, v.cases_passed, v.cases_errored) for v in summary.variants]
    assert {r.evaluator: {k: (f.pass_rate, f.avg_score, f.errored) for k, f in r.by_variant.items()}
            for r in summary.by_evaluator} == {
        name: {k: (f.pass_rate, f.avg_score, f.errored) for k, f in by.items()} for name, by in evaluators.items()}
    (delta,) = summary.comparison.deltas
    assert pair.regressions == delta.regressions == reference()["comparison"]["candidate"]["regressions"]
    assert pair.improvements == delta.improvements
    assert pair.overall == delta.significance  # the same model: declared once
    assert {k: v.model_dump() for k, v in pair.by_evaluator.items()} == {
        k: v.model_dump() for k, v in delta.by_evaluator.items()}


def test_an_unfiltered_page_has_the_same_cells_as_the_whole_run(run):
    with RunCells(run) as paged:
        first = paged.matrix(MatrixFilter(), baseline="main", offset=5, limit=4)
    with RunCells(run) as whole:
        whole.variants([])  # the whole run's cells, as a filter or a figure needs them
        second = whole.matrix(MatrixFilter(), baseline="main", offset=5, limit=4)
    assert first.cases == second.cases == ["case_05", "case_06", "case_07", "case_08"]
    assert first.cells == second.cells and first.total == second.total == 12
    assert first.cells[("case_05", "candidate")].flip == "regressed"


def test_a_page_is_made_again_when_a_newer_summary_removes_the_store_it_was_reading(run, monkeypatch):
    import shutil

    from starlette.testclient import TestClient

    import evalh_pipeline.queries.view_run as view_run
    from evalh_pipeline.view.app import create_app

    summarize_run(run, variant_order=["main", "candidate"], pass_criteria=PassCriteria(),
                  baseline_variant="main", config_path="eval.yaml", config_hash="h")
    client = TestClient(create_app(run.path.parent), base_url="http://127.0.0.1:8790")
    expected = client.get(f"/runs/{run.run_id}?failed=1")
    loads = []
    load_store = view_run.load_store

    def then_removed(con, run_dir, **kwargs):
        # The page's views are made; then a newer summary removes the store before its queries.
        loaded = load_store(con, run_dir, **kwargs)
        loads.append(loaded)
        if len(loads) == 1:
            shutil.rmtree(run_dir.cells_cache)
        return loaded

    monkeypatch.setattr(view_run, "load_store", then_removed)
    page = client.get(f"/runs/{run.run_id}?failed=1")
    assert page.status_code == expected.status_code == 200
    assert page.text == expected.text
    assert loads == [True, False]  # the second time from the JSONL


def _compare_client(tmp_path):
    from starlette.testclient import TestClient

    from evalh_pipeline.view.app import create_app

    runs = tmp_path / "two"
    pair = []
    for run_id, fixed in (("2026-05-01T10-00-00_regressions", ()), ("2026-05-02T10-00-00_regressions", ("case_00",))):
        run_dir = RunDirectory(eval_harness_run(runs, run_id, fixed=fixed))
        summarize_run(run_dir, variant_order=["main", "candidate"], pass_criteria=PassCriteria(),
                      baseline_variant="main", config_path="eval.yaml", config_hash="h")
        pair.append(run_dir)
    return TestClient(create_app(runs), base_url="http://127.0.0.1:8790"), pair


def _removing_stores(monkeypatch, removals: int) -> list[tuple[str, bool]]:
    """Every store compare loads, recorded; the first ``removals`` are removed (a newer summary
    replacing them) after their views are made, before the queries read them."""
    import shutil

    import evalh_pipeline.queries.cell_store as cell_store

    loads: list[tuple[str, bool]] = []
    load_store = cell_store.load_store

    def then_removed(con, run_dir, **kwargs):
        loaded = load_store(con, run_dir, **kwargs)
        loads.append((run_dir.run_id, loaded))
        if loaded and sum(was for _, was in loads) <= removals:
            shutil.rmtree(run_dir.cells_cache)
        return loaded

    monkeypatch.setattr(cell_store, "load_store", then_removed)
    return loads


def test_the_compare_page_is_answered_again_once_when_a_newer_summary_removes_a_store(tmp_path, monkeypatch):
    client, (a, b) = _compare_client(tmp_path)
    url = f"/compare/{a.run_id}/{b.run_id}"
    expected = client.get(url)
    loads = _removing_stores(monkeypatch, removals=1)
    page = client.get(url)
    assert page.status_code == expected.status_code == 200
    assert page.text == expected.text
    # A's store removed while read: answered a second time, from A's JSONL and B's store.
    assert loads == [(a.run_id, True), (a.run_id, False), (b.run_id, True)]


def test_the_compare_page_tries_a_second_time_only(tmp_path, monkeypatch):
    client, (a, b) = _compare_client(tmp_path)
    # Both stores removed while read, one after the other: the second try fails too (B's
    # store went while it was read) and the page says so, rather than trying yet again.
    loads = _removing_stores(monkeypatch, removals=2)
    page = client.get(f"/compare/{a.run_id}/{b.run_id}")
    assert page.status_code == 422 and "could not read" in page.text
    assert loads == [(a.run_id, True), (a.run_id, False), (b.run_id, True)]
