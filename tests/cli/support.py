"""Runs the CLI tests read: made in process (no `evalh` process), with a system that thinks."""

from __future__ import annotations

import asyncio

from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from tests.support.evals import write_eval

# The stub agent, with a reasoning field the read-only commands must never show.
THINKER = '''
from stub_agent import run as stub

async def run(case, variant):
    out = await stub(case, variant)
    out["thinking"] = "secret reasoning for " + case["id"]
    return out
'''

GOOD = """
  - name: base
    adapter: python_function
    target: thinker:run
  - name: candidate
    adapter: python_function
    target: thinker:run
"""

BROKEN = GOOD + "    break_every: 3\n"  # candidate answers "wrong" on case_0, case_3, ...


def make_run(folder, systems, run_id, cases=7):
    """A judged, summarized run of the toy eval with ``systems``, made in process; its folder."""
    path = write_eval(folder, cases=cases, systems=systems)
    (folder / "thinker.py").write_text(THINKER)
    spec = load_eval(path)
    info = prepare_cases(spec, run_id)
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    write_summary(spec, info.run_dir)
    return info.run_dir.path
