"""Item 10: oversized records (a huge case, a huge answer, ``token_input: 10**30``) are
capped and marked, or refused at the edge; the run's summary, inspect and compare work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from evalh_pipeline.queries.sql import MAX_RECORD_BYTES
from evalh_pipeline.store.recording import MAX_TEXT_CHARS, MAX_TRACE_BYTES
from tests.support.evalh_process import run_evalh

BIG = 20 * 1024 * 1024  # over the 16 MiB a reader accepts for one record

AGENT = f'''
def run(case, variant):
    kind = case["input"]["kind"]
    if kind == "huge_answer":
        return {{"final_answer": "Paris " + "x" * {BIG}}}
    if kind == "huge_tokens":
        return {{"final_answer": "Paris", "metrics": {{"token_input": 10**30}}}}
    if kind == "nan_cost":
        return {{"final_answer": "Paris", "metrics": {{"cost_usd": float("nan")}}}}
    return {{"final_answer": "Paris", "metrics": {{"token_input": 5}}}}
'''


@pytest.mark.e2e
def test_oversized_records_keep_the_run_readable(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "oversized"
    folder.mkdir()
    (folder / "agent.py").write_text(AGENT)
    with (folder / "cases.jsonl").open("w") as cases:
        for kind in ("huge_case", "huge_answer", "huge_tokens", "nan_cost", "plain"):
            text = "y" * BIG if kind == "huge_case" else ""
            cases.write(json.dumps({"id": kind, "input": {"kind": kind, "text": text}}) + "\n")
    (folder / "eval.yaml").write_text(f"""
eval: {{name: oversized}}
dataset: {{type: jsonl, path: cases.jsonl}}
systems:
  - {{name: only, adapter: python_function, target: "agent:run"}}
evaluators:
  - {{name: says_paris, type: contains_text, config: {{any_of: [Paris]}}}}
output: [{{type: local_files, path: {folder / "runs"}}}]
""")
    done = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    (run_dir,) = [p for p in (folder / "runs").iterdir() if not p.name.startswith(".")]
    lines = (run_dir / "traces.jsonl").read_bytes().splitlines()
    assert all(len(line) <= MAX_TRACE_BYTES < MAX_RECORD_BYTES for line in lines)
    traces = {t["case_id"]: t for t in map(json.loads, lines)}

    answer = traces["huge_answer"]
    assert len(answer["output"]["final_answer"]) == MAX_TEXT_CHARS
    assert {"path": "output.final_answer", "original_chars": BIG + 6, "kept_chars": MAX_TEXT_CHARS} \
        in answer["extra"]["truncated"]
    assert answer["error"] is None  # truncation is noted, not an error
    case = traces["huge_case"]
    assert [n["path"] for n in case["extra"]["truncated"]] == ["input.text"]
    for kind in ("huge_tokens", "nan_cost"):
        assert traces[kind]["error"]["type"] == "adapter_error", traces[kind]["error"]
    assert "token_input" in traces["huge_tokens"]["error"]["message"]

    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    (variant,) = summary["variants"]
    assert (variant["cases_total"], variant["cases_errored"], variant["cases_passed"]) == (5, 2, 3)
    for args in (["inspect", str(run_dir), "--limit", "0"], ["compare", str(run_dir), str(run_dir)],
                 ["re-evaluate", str(run_dir)]):
        again = run_evalh(args, env, tmp_path, timeout=300)
        assert again.returncode == 0, (args, again.stderr)
