"""The run's cell store (.cells/): the summary reads only what changed, never a stale store,
and gives byte for byte the summary a from-scratch one (no store) gives."""

from __future__ import annotations

import asyncio
import json
import os
import shutil

import pytest

import evalh_pipeline.queries.cell_store as cell_store
import evalh_pipeline.queries.cells as cells_module
import evalh_pipeline.queries.summary as summary_module
from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.queries.compare import compare_runs
from evalh_pipeline.queries.summary import summarize_run
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.retry import prepare_retry
from evalh_pipeline.runner.stages import write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.results_store import read_store
from tests.queries.support import A_CELLS, A_RESULTS, results_of, toy_run
from tests.support.in_process import FIVE_EVALUATORS, run_in_process, toy_spec


class _Reads:
    """Which JSONL files the store read."""

    def __init__(self, monkeypatch):
        self.files = []
        load_table = cell_store.load_table
        monkeypatch.setattr(cell_store, "load_table",
                            lambda con, name, path, *rest: self.files.append(path) or load_table(con, name, path, *rest))


def _summary_files(run_dir):
    return run_dir.summary.read_bytes(), run_dir.report.read_bytes()


def _from_scratch(spec, run_dir):
    """The summary files with no store (it is removed first), and the store then rebuilt."""
    shutil.rmtree(run_dir.cells_cache, ignore_errors=True)
    write_summary(spec, run_dir)
    return _summary_files(run_dir)


def _judged_by_blocks(tmp_path):
    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    write_summary(spec, run_dir)
    return spec, run_dir


def _file_of(run_dir, evaluator):
    return run_dir.results_store / read_store(run_dir)[evaluator].file


def test_after_one_evaluator_is_rejudged_the_summary_reads_only_its_new_file(tmp_path, monkeypatch):
    spec, run_dir = _judged_by_blocks(tmp_path)
    changed = toy_spec(tmp_path, FIVE_EVALUATORS.replace("pattern: \"answer\"", "pattern: \"Paris\""))
    asyncio.run(evaluate_traces(changed, run_dir))
    reads = _Reads(monkeypatch)
    grouped = []
    paired_by_group = summary_module.paired_by_group
    monkeypatch.setattr(summary_module, "paired_by_group", lambda rows: grouped.append(
        result := paired_by_group(rows)) or result)

    write_summary(changed, run_dir)

    assert reads.files == [_file_of(run_dir, "says_answer")]  # the traces and other evaluators from the store
    overall, per_evaluator = grouped  # the other evaluators' paired statistics are remembered
    assert set(overall) == {"candidate"} and set(per_evaluator) == {("candidate", "says_answer")}
    incremental = _summary_files(run_dir)
    assert "says_answer" in incremental[0].decode()
    assert incremental == _from_scratch(changed, run_dir)


def test_after_a_run_each_rejudged_evaluator_costs_the_summary_only_its_new_file(tmp_path, monkeypatch):
    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    write_summary(spec, run_dir)
    reads = _Reads(monkeypatch)
    first = FIVE_EVALUATORS.replace("pattern: \"answer\"", "pattern: \"Paris\"")
    for changed, name in ((first, "says_answer"), (first.replace("max_ms: 60000", "max_ms: 1"), "fast"),
                          (first, "fast")):  # one evaluator each time
        new_spec = toy_spec(tmp_path, changed)
        assert asyncio.run(evaluate_traces(new_spec, run_dir)).evaluators_rejudged == [name]
        reads.files.clear()

        write_summary(new_spec, run_dir)

        assert reads.files == [_file_of(run_dir, name)]
        assert _summary_files(run_dir) == _from_scratch(new_spec, run_dir)


def test_an_evaluator_rejudged_for_one_variant_costs_the_summary_its_file_only(tmp_path, monkeypatch):
    spec, run_dir = _judged_by_blocks(tmp_path)
    changed = toy_spec(tmp_path, FIVE_EVALUATORS.replace("pattern: \"answer\"", "pattern: \"Paris\""))
    asyncio.run(evaluate_traces(changed, run_dir, ["base"]))  # says_answer's file keeps candidate's lines
    reads = _Reads(monkeypatch)

    write_summary(changed, run_dir)

    assert reads.files == [_file_of(run_dir, "says_answer")]
    assert _summary_files(run_dir) == _from_scratch(changed, run_dir)


def test_a_run_folder_copied_elsewhere_keeps_its_store_and_a_trace_edited_by_hand_is_read_again(
        tmp_path, monkeypatch):
    spec, run_dir = _judged_by_blocks(tmp_path)
    copy = type(run_dir)(tmp_path / "elsewhere" / run_dir.run_id)
    shutil.copytree(run_dir.path, copy.path)  # new inodes and times: the contents say the same
    reads = _Reads(monkeypatch)
    write_summary(spec, copy)
    assert reads.files == []
    assert _summary_files(copy) == _summary_files(run_dir)
    lines = copy.traces.read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace('"latency_ms":', '"latency_ms":1')  # same size or not: content is what counts
    copy.traces.write_text("".join(lines))
    write_summary(spec, copy)
    assert reads.files == [copy.traces]


def test_a_retry_rewrites_the_traces_and_results_and_the_store_follows(tmp_path, monkeypatch):
    spec = toy_spec(tmp_path)
    cases = spec.path.parent / "cases.jsonl"
    lines = cases.read_text().splitlines()
    exploding = json.loads(lines[1])
    exploding["input"]["explode"] = ["candidate"]  # the stub agent raises for case_1 on candidate
    cases.write_text("\n".join([lines[0], json.dumps(exploding), *lines[2:]]) + "\n")
    run_dir = run_in_process(spec)
    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    write_summary(spec, run_dir)
    traces_part = json.loads((run_dir.cells_cache / cell_store.MANIFEST).read_text())["traces_part"]

    assert prepare_retry(run_dir) == 1  # what `evalh retry-failed` does: drop the cell's trace, run it again
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    reads = _Reads(monkeypatch)
    write_summary(spec, run_dir)

    assert run_dir.traces in reads.files  # the rewritten traces file is read again
    assert json.loads((run_dir.cells_cache / cell_store.MANIFEST).read_text())["traces_part"] != traces_part
    assert _summary_files(run_dir) == _from_scratch(spec, run_dir)


@pytest.mark.parametrize("damage", ["truncated part", "damaged page", "damaged traces page", "older format",
                                    "missing part", "memo of another shape", "manifest of another shape",
                                    "not JSON"])
def test_a_damaged_or_older_store_is_rebuilt_never_trusted(tmp_path, damage):
    spec, run_dir = _judged_by_blocks(tmp_path)
    expected = _summary_files(run_dir)
    manifest = run_dir.cells_cache / cell_store.MANIFEST
    part = run_dir.cells_cache / json.loads(manifest.read_text())["result_parts"][1]
    if damage == "damaged traces page":
        part = run_dir.cells_cache / json.loads(manifest.read_text())["traces_part"]
    if damage == "truncated part":
        part.write_bytes(part.read_bytes()[:100])
    elif damage in ("damaged page", "damaged traces page"):  # its footer intact: it fails only when the queries read its rows
        data = bytearray(part.read_bytes())
        footer = int.from_bytes(data[-8:-4], "little")  # Parquet: ... footer, its length, b"PAR1"
        data[4:len(data) - 8 - footer] = b"\xff" * (len(data) - 12 - footer)
        part.write_bytes(bytes(data))
    elif damage == "older format":
        manifest.write_text(manifest.read_text().replace(cell_store._FORMAT_KEY, "0"))
    elif damage == "missing part":
        part.unlink()
    elif damage == "manifest of another shape":
        data = json.loads(manifest.read_text())
        data["memo"][0]["parts"], data["evaluators"] = 5, []
        manifest.write_text(json.dumps(data))
    elif damage == "not JSON":
        manifest.write_bytes(manifest.read_bytes()[:-7])
    else:
        data = json.loads(manifest.read_text())
        assert len(data["memo"]) == 5  # each evaluator's paired statistics against the baseline variant
        for entry in data["memo"]:
            entry["value"] = [["candidate", "x", 0.5, 3]]
        manifest.write_text(json.dumps(data))

    write_summary(spec, run_dir)
    assert _summary_files(run_dir) == expected
    write_summary(spec, run_dir)  # and the next summary has a whole store again
    assert _summary_files(run_dir) == expected
    data = json.loads(manifest.read_text())
    assert data["format"] == cell_store._FORMAT_KEY
    assert all((run_dir.cells_cache / name).stat().st_size > 100 for name in data["result_parts"])


def test_only_the_files_of_the_current_store_are_kept(tmp_path):
    spec, run_dir = _judged_by_blocks(tmp_path)
    asyncio.run(evaluate_traces(toy_spec(tmp_path, FIVE_EVALUATORS.replace("max_ms: 60000", "max_ms: 1")), run_dir))
    write_summary(spec, run_dir)
    data = json.loads((run_dir.cells_cache / cell_store.MANIFEST).read_text())
    assert sorted(p.name for p in run_dir.cells_cache.iterdir()) == sorted(
        [cell_store.MANIFEST, data["traces_part"], *data["result_parts"]])
    assert len(data["result_parts"]) == 5  # one per evaluator's file


def _summarize(run_dir, criteria=None):
    summarize_run(run_dir, variant_order=["a", "b"], pass_criteria=criteria or PassCriteria(),
                  baseline_variant="a", config_path="eval.yaml", config_hash="h", cases_total=3)


def _two_runs(tmp_path):
    """Runs A and B of the same cells with different verdicts: a pair to compare."""
    a = toy_run(tmp_path, "A", A_CELLS, A_RESULTS)
    b = toy_run(tmp_path, "B", A_CELLS, results_of({("c1", "a"): {"x": "fail"}, ("c2", "a"): {"x": "pass"},
                                                   ("c3", "a"): {"x": "fail"}, ("c1", "b"): {"x": "pass"},
                                                   ("c2", "b"): {"x": "fail"}, ("c3", "b"): {"x": "fail"}}))
    return a, b


def _refuse_jsonl(*args, **kwargs):
    raise AssertionError("the JSONL was read")


def test_compare_answers_from_fresh_stores_without_reading_the_jsonl(tmp_path, monkeypatch):
    a, b = _two_runs(tmp_path)
    expected = compare_runs(a, b)  # from the JSONL: no stores yet
    for run in (a, b):
        _summarize(run)
        assert (run.cells_cache / cell_store.MANIFEST).exists()

    monkeypatch.setattr(cells_module, "load_table", _refuse_jsonl)  # only the stores can answer now
    cached = compare_runs(a, b)

    assert cached == expected
    assert cached.comparison.deltas[0].regressions == ["c1"]


def test_compare_never_reads_a_store_of_other_files(tmp_path, monkeypatch):
    a = toy_run(tmp_path, "A", A_CELLS, A_RESULTS)
    b = toy_run(tmp_path, "B", A_CELLS, A_RESULTS)
    _summarize(a)
    _summarize(b)
    # c1 on `a` now fails in B; the file is rewritten with the same size.
    lines = b.results.read_text().splitlines(keepends=True)
    b.results.write_text("".join(line.replace('"passed": true', '"passed": false') if '"c1"' in line
                                 and '"variant_name": "a"' in line else line for line in lines))
    os.utime(b.results, ns=(1, 1))
    read = []
    load_store = cell_store.load_store
    monkeypatch.setattr(cell_store, "load_store", lambda *a, **k: read.append(load_store(*a, **k)) or read[-1])

    assert compare_runs(a, b).comparison.deltas[0].regressions == ["c1"]
    assert read == [True, False]  # A's store is fresh, B's is not


def test_the_store_serves_any_pass_criteria(tmp_path, monkeypatch):
    outcomes = {("c1", "a"): {"x": "pass", "y": "fail"}, ("c2", "a"): {"x": "fail", "y": "pass"}}
    cells = {("c1", "a"): (100, None), ("c2", "a"): (100, None)}
    a = toy_run(tmp_path, "A", cells, results_of(outcomes), variants=("a",))
    b = toy_run(tmp_path, "B", cells, results_of(outcomes), {"all_required": ["x"]}, variants=("a",))
    _summarize(a)
    _summarize(b)  # summarized under the default criteria, but B's snapshot requires only `x`
    monkeypatch.setattr(cells_module, "load_table", _refuse_jsonl)

    (delta,) = compare_runs(a, b).comparison.deltas
    assert delta.improvements == ["c1"]


def test_the_cases_are_counted_once_per_cases_snapshot_and_again_when_it_changes(tmp_path, monkeypatch):
    spec, run_dir = _judged_by_blocks(tmp_path)
    counted = []
    count_lines = cell_store.count_lines
    monkeypatch.setattr(cell_store, "count_lines", lambda path: counted.append(path) or count_lines(path))
    assert write_summary(spec, run_dir).cases_total == 6
    assert counted == []  # counted by the first summary, remembered with the snapshot's identity

    lines = run_dir.cases.read_bytes().splitlines(keepends=True)
    run_dir.cases.write_bytes(b"".join(lines[:5]) + b"  \n")  # rewritten: five cases and a blank line
    assert write_summary(spec, run_dir).cases_total == 5
    assert counted == [run_dir.cases]
    assert write_summary(spec, run_dir).cases_total == 5
    assert counted == [run_dir.cases]
    shutil.rmtree(run_dir.cells_cache)
    assert write_summary(spec, run_dir).cases_total == 5  # no store: counted again
    assert len(counted) == 2


def test_a_reader_queries_the_stores_parquet_in_place_never_a_copy_in_duckdb(tmp_path):
    """compare and the viewer read the store as views: DuckDB holds no copy of the run's rows
    (at 100,000 cells × 2, copying spilled 169 MB and took a third of `evalh compare`)."""
    from evalh_pipeline.queries.sql import connect

    run = toy_run(tmp_path, "A", A_CELLS, A_RESULTS)
    _summarize(run)
    con = connect()
    try:
        assert cell_store.load_store(con, run, suffix="_a")
        tables = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        views = {name for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        assert not tables and {"cell_traces_a", "verdicts_a"} <= views
        for view in ("cell_traces_a", "verdicts_a"):
            plan = "\n".join(row[1] for row in con.execute(f"EXPLAIN SELECT case_id FROM {view}").fetchall())
            assert "READ_PARQUET" in plan.upper() or "PARQUET_SCAN" in plan.upper(), plan
        cell_store.drop_rows(con, suffix="_a")
        assert con.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone() == (0,)
    finally:
        con.close()


def test_compare_answers_again_when_a_newer_summary_removes_the_store_it_was_reading(tmp_path, monkeypatch):
    a, b = _two_runs(tmp_path)
    expected = compare_runs(a, b)  # from the JSONL: no stores yet
    for run in (a, b):
        _summarize(run)
    loads = []
    load_store = cell_store.load_store

    def then_removed(con, run_dir, **kwargs):
        # The views are made; then a newer summary (another process, not holding back for
        # readers) removes B's store before compare's queries read it.
        loaded = load_store(con, run_dir, **kwargs)
        loads.append((run_dir.path.name, loaded))
        if run_dir is b and len(loads) == 2:
            shutil.rmtree(run_dir.cells_cache)
        return loaded

    monkeypatch.setattr(cell_store, "load_store", then_removed)
    assert compare_runs(a, b) == expected
    # Answered twice: the second time from A's store and B's JSONL.
    assert loads == [("A", True), ("B", True), ("A", True), ("B", False)]
