"""Run folders for the viewer's tests: eval-harness 2.0.2's layout and hostile content.

``eval_harness_run`` writes a run folder exactly as eval-harness 2.0.2 lays it out (its four
files, no run.json) for the compat eval ``regressions``: the traces are what that eval's
agent answers, the results are the verdicts eval-harness 2.0.2 itself recorded for it
(tests/compat/reference/regressions.json), so the viewer must show eval-harness's own
regressions. ``HOSTILE_EVAL`` is an eval whose system answers with markup and script.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import yaml

from tests.compat.record_reference import EVALS, REFERENCE

REGRESSIONS = EVALS / "regressions"
STAMP = "2026-05-01T10:00:00Z"
EVALUATOR_TYPES = {"mentions_suburb": "contains_text", "expected_text": "contains_text", "lookup": "tool_called",
                   "price_fact": "exact_match"}


def reference() -> dict[str, Any]:
    """What eval-harness 2.0.2 recorded for the ``regressions`` eval."""
    data: dict[str, Any] = json.loads((REFERENCE / "regressions.json").read_text())
    return data


def _agent() -> Any:
    spec = importlib.util.spec_from_file_location("regressions_agent", REGRESSIONS / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run


def eval_harness_run(runs: Path, run_id: str, *, fixed: tuple[str, ...] = ()) -> Path:
    """The ``regressions`` eval's run folder in eval-harness 2.0.2's layout.

    ``fixed``: cases on which the candidate passes every evaluator (a later run that improved).
    """
    config = yaml.safe_load((REGRESSIONS / "eval.yaml").read_text())
    cases = [json.loads(line) for line in (REGRESSIONS / "cases.jsonl").read_text().splitlines() if line.strip()]
    verdicts = reference()["verdicts"]
    agent = _agent()
    run_dir = runs / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (run_dir / "config_hash.txt").write_text("0" * 64 + "\n")
    traces, results = [], []
    for case in cases:
        for system in config["systems"]:
            variant = system["name"]
            output = agent(case, {"name": variant, "metadata": system["metadata"]})
            base = {"schema_version": "1.0", "run_id": run_id, "case_id": case["id"], "variant_name": variant}
            traces.append({**base, "started_at": STAMP, "finished_at": STAMP, "latency_ms": 12,
                           "input": case["input"],
                           "output": {"final_answer": output["final_answer"], "thinking": None, "structured": None},
                           "messages": [{"role": "user", "content": json.dumps(case["input"])},
                                        {"role": "assistant", "content": output["final_answer"]}],
                           "tool_calls": output["tool_calls"], "tool_results": [],
                           "metrics": {"token_input": 40, "token_output": 12, "cost_usd": None},
                           "error": None, "extra": {}})
            outcome = verdicts[case["id"]][variant]
            for evaluator, verdict in outcome.items():
                ok = verdict == "pass" or (variant == "candidate" and case["id"] in fixed)
                results.append({**base, "evaluator": evaluator, "evaluator_type": EVALUATOR_TYPES[evaluator],
                                "passed": ok, "score": 1.0 if ok else 0.0,
                                "reason": "as expected" if ok else f"{evaluator} did not hold",
                                "detail": {}, "started_at": STAMP, "finished_at": STAMP, "latency_ms": 0,
                                "error": None})
    (run_dir / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    counts = dict(reference()["cases_passed"])
    counts["candidate"] += len(fixed)
    (run_dir / "summary.yaml").write_text(yaml.safe_dump({
        "schema_version": "1.0", "run_id": run_id, "cases_total": len(cases),
        "variants": [{"name": name, "cases_total": len(cases),
                      "cases_passed": counts[name],
                      "cases_errored": 0, "pass_rate": counts[name] / len(cases), "avg_latency_ms": 12}
                     for name in ("main", "candidate")]}))
    return run_dir


# An eval whose system answers with markup, script and a javascript: link, with a case id
# that looks like a path and a variant named like an HTML element (what eval.yaml allows).
HOSTILE_ANSWERS = {
    "script": "<script>window.__pwned = 1; alert(1)</script>",
    "img": '<img src=x onerror="window.__pwned = 2; alert(2)">',
    "link": '<a href="javascript:alert(3)" id="evil">click me</a> [md](javascript:alert(3))',
    "../../etc/passwd": "a case id that looks like a path",
}
HOSTILE_VARIANT = "<img src=x onerror=alert(6)>"
HOSTILE_AGENT = '''
def run(case, variant):
    return {"final_answer": case["input"]["answer"], "thinking": "<script>alert('thinking')</script>",
            "tool_calls": [{"name": "<img src=x onerror=alert(4)>", "arguments": {"q": "<script>alert(5)</script>"}}],
            "metrics": {"token_input": 1, "token_output": 1}}
'''
HOSTILE_EVAL = f"""
eval:
  name: hostile
dataset:
  type: jsonl
  path: cases.jsonl
systems:
  - name: main
    adapter: python_function
    target: hostile_agent:run
  - name: "{HOSTILE_VARIANT}"
    adapter: python_function
    target: hostile_agent:run
evaluators:
  - name: mentions_script
    type: contains_text
run:
  baseline_variant: main
"""


def write_hostile_eval(folder: Path) -> Path:
    """The hostile eval's folder; returns its eval.yaml."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hostile_agent.py").write_text(HOSTILE_AGENT)
    with (folder / "cases.jsonl").open("w") as handle:
        for case_id, answer in HOSTILE_ANSWERS.items():
            handle.write(json.dumps({"id": case_id, "input": {"answer": answer},
                                     "metadata": {"<b>kind</b>": "<i>hostile</i>"},
                                     "expected": {"answer_should_include": ["<script>"]}}) + "\n")
    (folder / "eval.yaml").write_text(HOSTILE_EVAL)
    return folder / "eval.yaml"


def hostile_run(runs: Path, run_id: str = "2026-06-01T00-00-00-000000_hostile") -> Path:
    """The hostile eval's run folder written directly in this project's layout (for unit tests)."""
    run_dir = runs / run_id
    run_dir.mkdir(parents=True)
    variants = ["main", HOSTILE_VARIANT]
    (run_dir / "run.json").write_text(json.dumps({"run_id": run_id, "eval_name": "hostile", "variants": variants,
                                                  "created_at": STAMP}))
    (run_dir / "config.yaml").write_text("eval: {name: hostile}\nrun: {baseline_variant: main}\n")
    cases, traces, results = [], [], []
    for case_id, answer in HOSTILE_ANSWERS.items():
        cases.append({"id": case_id, "input": {"answer": answer}, "metadata": {"<b>kind</b>": "<i>hostile</i>"},
                      "expected": {}})
        for variant in variants:
            base = {"schema_version": "1.0", "run_id": run_id, "case_id": case_id, "variant_name": variant, "sample": 0}
            traces.append({**base, "started_at": STAMP, "finished_at": STAMP, "latency_ms": 1,
                           "input": {"answer": answer}, "output": {"final_answer": answer},
                           "tool_calls": [{"name": "<b>tool</b>", "arguments": {"q": "<script>alert(5)</script>"}}],
                           "messages": [{"role": "<script>", "content": answer}], "error": None})
            ok = variant == "main" or case_id != "script"
            results.append({**base, "evaluator": "<i>judge</i>", "evaluator_type": "llm_judge", "passed": ok,
                            "score": None, "reason": "<script>alert('reason')</script>",
                            "detail": {"rationale": "<img src=x onerror=alert(7)>"},
                            "started_at": STAMP, "finished_at": STAMP, "latency_ms": 0, "error": None})
    for name, rows in (("cases.jsonl", cases), ("traces.jsonl", traces), ("results.jsonl", results)):
        (run_dir / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run_dir




def write_run(runs: Path, run_id: str, answers: dict[str, dict[str, str]], *, eval_name: str = "answers",
              failing: tuple[tuple[str, str], ...] = (), detail: dict[str, Any] | None = None,
              reason: str = "as judged", complete: bool | None = True) -> Path:
    """A run folder in this project's layout: ``answers`` is case id -> variant -> final answer.

    Each cell has one ``llm_judge`` result, failed on the (case, variant) pairs in ``failing``,
    carrying ``detail`` (the judge's per-assertion reasons) and ``reason``. ``complete``: what
    the summary's completeness says (None: no summary yet, as while the run is running).
    """
    run_dir = runs / run_id
    run_dir.mkdir(parents=True)
    variants = list(dict.fromkeys(v for by in answers.values() for v in by))
    (run_dir / "run.json").write_text(json.dumps({"run_id": run_id, "eval_name": eval_name, "variants": variants,
                                                  "created_at": STAMP}))
    (run_dir / "config.yaml").write_text(f"eval: {{name: {eval_name}}}\nrun: {{baseline_variant: {variants[0]}}}\n")
    cases, traces, results = [], [], []
    for case_id, by_variant in answers.items():
        cases.append({"id": case_id, "input": {"question": f"question {case_id}"}, "metadata": {}, "expected": {}})
        for variant, answer in by_variant.items():
            base = {"schema_version": "1.0", "run_id": run_id, "case_id": case_id, "variant_name": variant, "sample": 0}
            traces.append({**base, "started_at": STAMP, "finished_at": STAMP, "latency_ms": 1,
                           "input": {"question": f"question {case_id}"}, "output": {"final_answer": answer},
                           "messages": [], "error": None})
            results.append({**base, "evaluator": "judge", "evaluator_type": "llm_judge",
                            "passed": (case_id, variant) not in failing, "score": None, "reason": reason,
                            "detail": detail or {}, "started_at": STAMP, "finished_at": STAMP, "latency_ms": 0,
                            "error": None})
    for name, rows in (("cases.jsonl", cases), ("traces.jsonl", traces), ("results.jsonl", results)):
        (run_dir / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    if complete is not None:
        (run_dir / "summary.yaml").write_text(yaml.safe_dump({
            "schema_version": "1.0", "run_id": run_id,
            "completeness": {"complete": complete, "expected_cells": len(traces), "present_cells": len(traces)}}))
    return run_dir
