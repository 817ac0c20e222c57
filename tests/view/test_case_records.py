"""A cell page's records (queries/view_cell.py): read where the cell store's line index says,
only while the traces say what the index was made from; otherwise by a scan, with the same
answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalh_pipeline.queries.view_cell as view_cell
from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.queries import cell_store
from evalh_pipeline.queries.sql import connect
from evalh_pipeline.queries.summary import summarize_run
from evalh_pipeline.queries.view_cell import read_case
from evalh_pipeline.store.run_dir import RunDirectory
from tests.view.support import eval_harness_run

CASE = "case_05"


@pytest.fixture
def run(tmp_path: Path) -> RunDirectory:
    folder = eval_harness_run(tmp_path / "runs", "2026-05-01T10-00-00-000000_regressions")
    (folder / "run.json").write_text(json.dumps({"run_id": folder.name, "eval_name": "regressions",
                                                 "variants": ["main", "candidate"]}))
    return RunDirectory(folder)


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files read_case scanned."""
    paths: list[Path] = []
    matching = view_cell._matching

    def recording(con, path, key, value):
        paths.append(path)
        return matching(con, path, key, value)

    monkeypatch.setattr(view_cell, "_matching", recording)
    return paths


def _summarize(run: RunDirectory) -> None:
    summarize_run(run, variant_order=["main", "candidate"], pass_criteria=PassCriteria(),
                  baseline_variant="main", config_path="eval.yaml", config_hash="h")


def _index(run: RunDirectory) -> Path:
    (name,) = json.loads((run.cells_cache / cell_store.MANIFEST).read_text())["line_index"]
    return run.cells_cache / name


def test_a_cases_traces_are_read_through_the_store_without_scanning_the_traces(run, scanned):
    expected = read_case(run, CASE)  # no store yet: every file scanned
    assert run.traces in scanned and len(expected.traces) == 2
    _summarize(run)
    scanned.clear()
    assert read_case(run, CASE) == expected
    assert run.traces not in scanned
    assert read_case(run, "no_such_case").traces == []
    assert run.traces not in scanned  # the index says so: the traces say what it was made from


def test_traces_written_after_the_summary_are_found_by_a_scan(run, scanned):
    _summarize(run)
    first = json.loads(run.traces.read_text().splitlines()[0])
    with run.traces.open("a") as traces:  # a second sample, the store not made again
        traces.write(json.dumps({**first, "case_id": CASE, "sample": 1}) + "\n")
    scanned.clear()
    records = read_case(run, CASE)
    assert run.traces in scanned
    assert (first["variant_name"], 1) in records.cells() and len(records.traces) == 3


def test_a_line_other_than_the_one_indexed_is_never_shown(run, scanned):
    _summarize(run)
    expected = read_case(run, CASE)
    index = _index(run)
    # The index made to point the case at other lines (the traces unchanged): every line
    # read is checked against its recorded hash, so the page scans instead.
    con = connect()
    try:
        rows = con.execute(f"SELECT case_id, line_offset, line_hash FROM read_parquet('{index}')").fetchall()
        other_offset, other_hash = next((o, h) for c, o, h in rows if c == "case_06")
        con.execute("CREATE TABLE moved (case_id VARCHAR, line_offset BIGINT, line_hash VARCHAR)")
        con.executemany("INSERT INTO moved VALUES (?, ?, ?)",
                        [(c, other_offset if c == CASE else o, h) for c, o, h in rows])
        con.execute(f"COPY moved TO '{index}' (FORMAT parquet)")
        assert cell_store.case_lines(con, run, CASE) is None
        # ... and its hashes too: a line read must also be the case's.
        con.execute("UPDATE moved SET line_hash = $hash WHERE case_id = $case", {"hash": other_hash, "case": CASE})
        con.execute(f"COPY moved TO '{index}' (FORMAT parquet)")
        assert cell_store.case_lines(con, run, CASE) is None
    finally:
        con.close()
    scanned.clear()
    assert read_case(run, CASE) == expected
    assert run.traces in scanned


def test_a_damaged_index_is_not_used(run, scanned):
    _summarize(run)
    expected = read_case(run, CASE)
    _index(run).write_bytes(b"not parquet")
    scanned.clear()
    assert read_case(run, CASE) == expected
    assert run.traces in scanned


def test_the_index_has_every_complete_trace_line(run):
    lines = run.traces.read_bytes().splitlines(keepends=True)
    _summarize(run)
    con = connect()
    try:
        rows = con.execute(f"SELECT line_offset FROM read_parquet('{_index(run)}') ORDER BY 1").fetchall()
    finally:
        con.close()
    starts = [sum(len(line) for line in lines[:i]) for i in range(len(lines))]
    assert [offset for (offset,) in rows] == starts
