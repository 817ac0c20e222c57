"""What a python_function target prints stays out of the progress display: with
``isolation: process`` each cell's stdout and stderr land in its trace (bounded, with a
marker past the bound), never on the terminal; what is not captured (``isolation: thread``,
writes at import or straight to a descriptor) is whole lines above the bars."""

from __future__ import annotations

import json

import pytest

from evalh_pipeline.systems.cell_output import LIMIT
from tests.support.evalh_process import EVALH
from tests.support.evals import write_eval
from tests.support.pty_terminal import HIDE_CURSOR, run_on_terminal

pytestmark = pytest.mark.integration

PRINTER = '''
import os, sys

print("imported the printer")  # at import: no cell to keep it

def run(case, variant):
    if variant["name"] == "base":  # straight to the descriptor: not captured
        os.write(1, f"fd-write {case['id']}\\n".encode())
    print(f"said-on-stdout {variant['name']} {case['id']}")
    print(f"said-on-stderr {variant['name']} {case['id']}", file=sys.stderr)
    if case["id"] == "case_0" and variant["name"] == "base":
        sys.stdout.write("x" * 10_000_000)  # 10 MB
    return {"final_answer": case["input"]["answer"]}
'''

SYSTEMS = """
  - name: base
    adapter: python_function
    target: printer:run
    isolation: process
  - name: inline
    adapter: python_function
    target: printer:run
"""


def test_prints_of_an_isolated_target_land_in_their_cells_trace_and_never_break_the_bars(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=4, systems=SYSTEMS,
                      evaluators="\n  - name: mentions_paris\n    type: contains_text\n")
    (tmp_path / "toy" / "printer.py").write_text(PRINTER)
    session = run_on_terminal([*EVALH, "run", str(path)], env=env, cwd=tmp_path)
    assert session.returncode == 0, session.text
    assert HIDE_CURSOR in session.raw and session.cursor_left_visible
    lines = session.text.splitlines()
    assert "said-on-stdout base" not in session.text and "said-on-stderr base" not in session.text
    assert "xxxx" not in session.text
    # What is not captured (the in-process variant's prints, writes at import and straight to
    # a worker's descriptors) is shown in whole lines of its own, never inside a bar.
    shown = sorted(line.strip() for line in lines if "said-on-" in line or "fd-write" in line)
    assert shown == sorted([f"said-on-{s} inline case_{i}" for s in ("stdout", "stderr") for i in range(4)]
                           + [f"fd-write case_{i}" for i in range(4)]), shown
    imported = [line.strip() for line in lines if "imported the printer" in line]
    assert imported and set(imported) == {"imported the printer"}, imported
    # The bars are whole: every line that draws one is only the bar.
    bars = [line for line in lines if "traces" in line and "/8" in line]
    assert bars and all(line.strip().startswith("traces") and line.rstrip().endswith(tuple("0123456789"))
                        for line in bars), bars
    assert "8/8" in bars[-1]
    assert "pass rate" in session.text

    (run_dir,) = [p for p in (tmp_path / "toy" / "runs").iterdir() if p.name != "baselines"]
    traces = {(t["variant_name"], t["case_id"]): t
              for t in map(json.loads, (run_dir / "traces.jsonl").read_text().splitlines())}
    for trace in traces.values():  # where the cell ran (runner/shards.py): not what it printed
        assert trace["extra"].pop("executor")["shard"] == "1-of-1"
    for case_id in ("case_1", "case_2", "case_3"):
        assert traces["base", case_id]["extra"] == {"stdout": f"said-on-stdout base {case_id}\n",
                                                    "stderr": f"said-on-stderr base {case_id}\n"}
        assert traces["inline", case_id]["extra"] == {}
    said = "said-on-stdout base case_0\n"
    big = traces["base", "case_0"]["extra"]["stdout"]
    assert big[:LIMIT] == said + "x" * (LIMIT - len(said))
    dropped = len(said) + 10_000_000 - LIMIT
    assert big[LIMIT:] == f"\n[evalh: {dropped:,} more characters of stdout not kept; a cell keeps the first {LIMIT:,}]"
    assert traces["base", "case_0"]["extra"]["stderr"] == "said-on-stderr base case_0\n"
    assert traces["base", "case_0"]["error"] is None
