"""Two Inspect logs of one task (two models), imported and replayed through the CLI as real
processes, offline: each run reproduces its log's scores, and `evalh compare` gives the paired
statistics Inspect lacks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.e2e
LOGS = Path(__file__).parent / "logs"


def test_two_imported_logs_replay_their_scores_and_compare_paired(tmp_path: Path, env):
    runs = {}
    for name, log in (("a", "arithmetic-model-a.json"), ("b", "arithmetic-model-b.eval")):
        proc = run_evalh(["import", "inspect", str(LOGS / log), "-o", str(tmp_path / name)], env, tmp_path)
        assert proc.returncode == 0, proc.stderr
        before = {p.name for p in (tmp_path / "runs").iterdir()} if (tmp_path / "runs").exists() else set()
        proc = run_evalh(["run", str(tmp_path / name / "eval.yaml")], env, tmp_path, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (runs[name],) = [p for p in (tmp_path / "runs").iterdir() if p.name not in before and not p.name.startswith(".")]
    # The logs' own scores: model A matched q1, q2, q4 (closeness 1.0 on the same three); model B all six.
    for name, passed in (("a", 3), ("b", 6)):
        summary = yaml.safe_load((runs[name] / "summary.yaml").read_text())
        assert [(v["name"], v["cases_total"], v["cases_passed"]) for v in summary["variants"]] == [("inspect", 6, passed)]
    proc = run_evalh(["compare", str(runs["a"]), str(runs["b"])], env, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "50.0% → 100.0%" in proc.stdout
    assert "0 regression(s), 3 improvement(s)" in proc.stdout
    # McNemar's exact test on the three discordant pairs (all improvements): p = 2 * 0.5**3.
    assert "inspect: +50.0 pp" in proc.stdout and "p = 0.25" in proc.stdout
