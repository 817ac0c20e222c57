"""The viewer's cell records (queries/view_cell.py): every line of one case id, however a writer spelled it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalh_pipeline.queries.view_cell import read_case
from evalh_pipeline.store.run_dir import RunDirectory


def _line(case_id: str, variant: str, *, ascii_only: bool = False, escaped_slash: bool = False, answer: str = "ok") -> str:
    text = json.dumps({"case_id": case_id, "variant_name": variant, "output": {"final_answer": answer}},
                      ensure_ascii=ascii_only)
    return text.replace("/", "\\/") if escaped_slash else text


@pytest.mark.parametrize("case_id", ["plain_1", 'quo"te', "back\\slash", "a/b", "ünïcode", "tab\there", "x" * 300])
def test_a_case_is_found_whatever_its_id_and_however_a_writer_escaped_it(tmp_path: Path, case_id: str) -> None:
    run = RunDirectory(tmp_path / "run")
    run.path.mkdir()
    lines = [
        _line(case_id, "base"),
        _line(case_id, "candidate", ascii_only=True, escaped_slash=True),  # another writer's spelling
        _line("other", "base", answer=f'mentions "{case_id}" in its answer'),  # never a match by text alone
        '{"case_id": "torn',
    ]
    run.traces.write_text("\n".join(lines) + "\n", encoding="utf-8")
    records = read_case(run, case_id)
    assert sorted(t["variant_name"] for t in records.traces) == ["base", "candidate"]
    assert all(t["case_id"] == case_id for t in records.traces)
    assert records.results == [] and records.case is None
