"""What a python_function target prints stays out of the progress display: with
``isolation: process`` each cell's stdout and stderr land in its trace (bounded, with a
marker past the bound), never on the terminal."""

from __future__ import annotations

import json

import pytest

from evalh_pipeline.systems.cell_output import LIMIT
from tests.conftest import EVALH, write_eval
from tests.support.pty_terminal import HIDE_CURSOR, run_on_terminal

pytestmark = pytest.mark.integration

PRINTER = '''
import sys

def run(case, variant):
    print(f"said-on-stdout {case['id']}")
    print(f"said-on-stderr {case['id']}", file=sys.stderr)
    if case["id"] == "case_0":
        sys.stdout.write("x" * 10_000_000)  # 10 MB
    return {"final_answer": case["input"]["answer"]}
'''

SYSTEMS = """
  - name: base
    adapter: python_function
    target: printer:run
    isolation: process
"""


def test_prints_of_an_isolated_target_land_in_their_cells_trace_not_on_the_terminal(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=4, systems=SYSTEMS,
                      evaluators="\n  - name: mentions_paris\n    type: contains_text\n")
    (tmp_path / "toy" / "printer.py").write_text(PRINTER)
    session = run_on_terminal([*EVALH, "run", str(path)], env=env, cwd=tmp_path)
    assert session.returncode == 0, session.text
    assert HIDE_CURSOR in session.raw and session.cursor_left_visible
    assert "said-on-" not in session.text and "xxxx" not in session.text
    # The bars are whole: every line that draws one is only the bar.
    bars = [line for line in session.text.splitlines() if "traces" in line and "/4" in line]
    assert bars and all(line.strip().startswith("traces") and line.rstrip().endswith(tuple("0123456789"))
                        for line in bars), bars
    assert "4/4" in bars[-1]
    assert "pass rate" in session.text

    (run_dir,) = [p for p in (tmp_path / "toy" / "runs").iterdir() if p.name != "baselines"]
    traces = {t["case_id"]: t for t in map(json.loads, (run_dir / "traces.jsonl").read_text().splitlines())}
    for case_id in ("case_1", "case_2", "case_3"):
        assert traces[case_id]["extra"] == {"stdout": f"said-on-stdout {case_id}\n",
                                            "stderr": f"said-on-stderr {case_id}\n"}
    big = traces["case_0"]["extra"]["stdout"]
    kept, marker = big[:LIMIT], big[LIMIT:]
    assert kept == "said-on-stdout case_0\n" + "x" * (LIMIT - len("said-on-stdout case_0\n"))
    dropped = len("said-on-stdout case_0\n") + 10_000_000 - LIMIT
    assert marker == f"\n[evalh: {dropped:,} more characters of stdout not kept; a cell keeps the first {LIMIT:,}]"
    assert traces["case_0"]["extra"]["stderr"] == "said-on-stderr case_0\n"
    assert traces["case_0"]["error"] is None
