"""`evalh compare` and `evalh inspect`: read-only commands over run directories made by the engine."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cli.support import BROKEN, GOOD, make_run
from tests.support.evalh_process import EVALH
from tests.support.paths import REPO

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("evals") / "toy"
    good = make_run(folder, GOOD, "r1_good")
    broken = make_run(folder, BROKEN, "r2_broken")
    return good, broken


def _evalh(*args):
    return subprocess.run([*EVALH, *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})


def test_read_only_commands_do_not_import_dagster():
    proc = subprocess.run([sys.executable, "-c", "import evalh_pipeline.cli, sys; assert 'dagster' not in sys.modules"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_compare_lists_regressions_and_gates_on_them(runs):
    good, broken = runs
    proc = _evalh("compare", good, broken)
    assert proc.returncode == 0, proc.stderr
    assert "100.0% → 57.1%" in proc.stdout and "-42.9 pp" in proc.stdout
    assert "regressions in candidate (3): case_0, case_3, case_6" in proc.stdout
    assert "3 regression(s), 0 improvement(s)" in proc.stdout

    gated = _evalh("compare", good, broken, "--exit-nonzero-on-regression")
    assert gated.returncode == 1

    reverse = _evalh("compare", broken, good, "--exit-nonzero-on-regression", "--json")
    assert reverse.returncode == 0, reverse.stderr
    report = json.loads(reverse.stdout)
    assert report["comparison"]["baseline"] == broken.name and report["comparison"]["kind"] == "ad_hoc"
    deltas = {d["variant"]: d for d in report["comparison"]["deltas"]}
    assert deltas["candidate"]["improvements"] == ["case_0", "case_3", "case_6"]
    assert deltas["candidate"]["regressions"] == [] and report["comparison"]["improvements_count"] == 3
    (candidate,) = [v for v in report["variants"] if v["variant"] == "candidate"]
    assert candidate["pass_rate_delta"] == pytest.approx(3 / 7) and candidate["avg_cost_delta_usd"] == 0
    assert deltas["base"]["regressions"] == deltas["base"]["improvements"] == []


def test_compare_refuses_a_folder_that_is_not_a_run(runs, tmp_path):
    proc = _evalh("compare", runs[0], tmp_path)
    assert proc.returncode == 2 and "not a run directory" in proc.stderr


def test_inspect_failed_shows_only_failing_cells_with_verdicts(runs):
    _, broken = runs
    proc = _evalh("inspect", broken, "--failed")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "── case_0 · candidate · FAIL ──" in out and "case_3 · candidate · FAIL" in out
    assert "case_1 · candidate" not in out and "· base ·" not in out
    assert "answer: wrong" in out and "tool calls:\n  lookup" in out
    assert 'lookup({"q": "case_0"})' in out
    assert "✗ mentions_paris:" in out and "✓ used_lookup:" in out
    assert '"answer": "answer 0 Paris"' in out  # the input
    assert "secret reasoning" not in out
    assert "case_6 · candidate · FAIL" in out and "3 matching cells" in out


def test_inspect_filters_thinking_and_limit(runs):
    _, broken = runs
    proc = _evalh("inspect", broken, "--case", "case_1", "--variant", "base", "--thinking")
    assert proc.returncode == 0, proc.stderr
    assert "case_1 · base · PASS" in proc.stdout
    assert "thinking: secret reasoning for case_1" in proc.stdout
    assert "1 matching cell " in proc.stdout

    limited = _evalh("inspect", broken, "--limit", "3")
    assert limited.returncode == 0, limited.stderr
    assert limited.stdout.count(" · ") >= 3 and "14 matching cells" in limited.stdout
    assert "(showing 3; use --limit)" in limited.stdout
