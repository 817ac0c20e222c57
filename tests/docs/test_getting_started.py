"""The getting-started page's first eval runs as the page says: its three files, `evalh run`, the verdicts."""

from __future__ import annotations

import os

import pytest

from tests.support.docs_site import DOCS, code_blocks
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

PAGE = DOCS / "getting-started.md"


def test_the_first_eval_runs_and_shows_the_regression_the_page_describes(tmp_path):
    files = {block.title: block.text for block in code_blocks(PAGE) if block.title}
    assert set(files) == {"evals/capitals/agent.py", "evals/capitals/cases.yaml", "evals/capitals/eval.yaml"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    # The `$schema` line is a comment: the copy runs with no schema file at the path it names.
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / ".dagster_home"), "EVALH_RUNS_DIR": str(tmp_path / "runs")}
    (tmp_path / ".dagster_home").mkdir()

    dry = run_evalh(["run", "evals/capitals/eval.yaml", "--dry-run"], env, tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "cells: 6 (3 cases × 2 variants × 1 sample)" in dry.stdout

    run = run_evalh(["run", "evals/capitals/eval.yaml"], env, tmp_path)
    assert run.returncode == 0, run.stderr
    output = run.stdout + run.stderr
    rows: dict[str, list[str]] = {}
    for line in output.splitlines():  # the per-variant table: variant, cases, passed, ...
        if line.split()[:1] in (["verbose"], ["terse"]):
            rows.setdefault(line.split()[0], line.split())
    assert rows["verbose"][1:3] == ["3", "3"] and rows["terse"][1:3] == ["3", "2"]  # cases, passed
    assert "gate failed: capitals/summary: no_regressions_vs_baseline_variant" in output
    assert "terse: japan" in output and "not distinguishable from noise" in output
    page = PAGE.read_text()
    assert "`verbose` passes 3 of 3, `terse` 2 of 3" in page and "`gate failed: capitals/summary: ...`" in page
