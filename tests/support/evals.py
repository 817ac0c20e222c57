"""A small offline eval written from a template: a stub agent, JSONL cases, two variants."""

from __future__ import annotations

import textwrap
from pathlib import Path

AGENT = '''
import asyncio, json, os

async def run(case, variant):
    log = os.environ.get("EVALH_TEST_CALL_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps([case["id"], variant["name"]]) + "\\n")
    delay = float(variant["config"].get("delay", 0))
    await asyncio.sleep(delay)
    # A test that must act while the run is still going holds the later cases back until
    # it creates the gate file, so the run cannot end first however slow the machine is.
    gate, hold_from = os.environ.get("EVALH_TEST_GATE"), variant["config"].get("hold_from")
    if gate and hold_from is not None and int(case["id"].split("_")[-1]) >= hold_from:
        while not os.path.exists(gate):
            await asyncio.sleep(0.02)
    if case["input"].get("explode") and variant["name"] in case["input"]["explode"]:
        raise RuntimeError("boom")
    # A system that is down for one case on one machine only (a retry elsewhere answers).
    if case["id"] == os.environ.get("EVALH_TEST_FAIL_CASE"):
        raise RuntimeError("down on this machine")
    answer = case["input"]["answer"]
    if variant["config"].get("break_every") and int(case["id"].split("_")[-1]) % variant["config"]["break_every"] == 0:
        answer = "wrong"
    return {"final_answer": answer,
            "tool_calls": [{"name": "lookup", "arguments": {"q": case["id"]}}],
            "metrics": {"token_input": 10, "token_output": 5, "cost_usd": 0.001}}
'''


# Two variants of the stub agent that answer alike (the default's candidate regresses).
STEADY_SYSTEMS = """
  - name: base
    adapter: python_function
    target: stub_agent:run
  - name: candidate
    adapter: python_function
    target: stub_agent:run
"""


def write_eval(folder: Path, *, cases: int = 6, extra_yaml: str = "", systems: str | None = None,
               evaluators: str | None = None) -> Path:
    """A small offline eval: `cases` JSONL cases, a stub agent, two variants by default."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stub_agent.py").write_text(AGENT)
    with (folder / "cases.jsonl").open("w") as f:
        import json

        for i in range(cases):
            f.write(json.dumps({"id": f"case_{i}", "input": {"answer": f"answer {i} Paris"},
                                "metadata": {"group": "even" if i % 2 == 0 else "odd"},
                                "expected": {"answer_should_include": ["Paris"], "must_call_tools": ["lookup"]}}) + "\n")
    systems = systems or STEADY_SYSTEMS + "    break_every: 3\n"
    evaluators = evaluators or """
  - name: mentions_paris
    type: contains_text
  - name: used_lookup
    type: tool_called
    config: {tool_name: lookup}
"""
    text = f"""
eval:
  name: {folder.name}
dataset:
  type: jsonl
  path: cases.jsonl
systems:{systems}
evaluators:{evaluators}
run:
  max_concurrency: 4
  baseline_variant: base
output:
  - type: local_files
    path: {folder / "runs"}
{extra_yaml}
"""
    path = folder / "eval.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def write_function_eval(root: Path, name: str, *, agent: str, eval_yaml: str, cases: int,
                        question: str = "capital of France?") -> tuple[Path, Path]:
    """A Dagster home (telemetry off) and an eval folder ``root/name`` holding ``agent.py``,
    ``eval.yaml`` and ``cases`` JSONL cases ``case_0``.. asking ``question``; returns both."""
    import json

    home = root / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    folder = root / name
    folder.mkdir()
    (folder / "agent.py").write_text(agent)
    (folder / "eval.yaml").write_text(eval_yaml)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"case_{i}", "input": {"q": question}}) + "\n"
                                                for i in range(cases)))
    return home, folder


def set_case_variants(path: Path, only: dict[int, object]) -> None:
    """``variants: only[i]`` on the i-th row of the eval's cases.jsonl (the variants it runs on)."""
    import json

    dataset = path.parent / "cases.jsonl"
    rows = [json.loads(line) for line in dataset.read_text().splitlines()]
    for i, value in only.items():
        rows[i]["variants"] = value
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))
