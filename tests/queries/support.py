"""Run folders written record by record, for the query tests: no system, no judge."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.queries.summary import summarize_run
from evalh_pipeline.store.run_dir import RunDirectory

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


# What a result whose judge was down records (``unreachable`` in the results below).
UNREACHABLE = "JudgeUnreachable: judge call to http://127.0.0.1:9/v1/chat/completions failed: ConnectError"


def write_records(run_dir: RunDirectory, cells: dict, results: dict) -> None:
    """traces.jsonl and results.jsonl of ``run_dir`` from ``{(case, variant): (latency_ms, error type)}`` and
    ``{(case, variant, evaluator): "pass" | "fail" | "error" | "unreachable"}``."""
    run_dir.path.mkdir(parents=True)
    with run_dir.traces.open("w") as f:
        for (case, variant), (latency, error) in cells.items():
            f.write(json.dumps({
                "schema_version": "1.0", "run_id": "r", "case_id": case, "variant_name": variant,
                "started_at": T0.isoformat(), "finished_at": (T0 + timedelta(milliseconds=latency)).isoformat(),
                "latency_ms": latency, "input": {}, "output": {},
                "metrics": {"token_input": 10, "cost_usd": 0.5},
                "error": {"type": error, "message": "x"} if error else None,
            }) + "\n")
    with run_dir.results.open("w") as f:
        for (case, variant, evaluator), outcome in results.items():
            f.write(json.dumps({
                "schema_version": "1.0", "run_id": "r", "case_id": case, "variant_name": variant,
                "evaluator": evaluator, "evaluator_type": "t", "passed": outcome == "pass", "score": 1.0 if outcome == "pass" else 0.0,
                "reason": "", "started_at": T0.isoformat(), "finished_at": T0.isoformat(), "latency_ms": 0,
                "error": ({"type": "exception", "message": "x"} if outcome == "error"
                          else {"type": "judge_unreachable", "message": UNREACHABLE} if outcome == "unreachable"
                          else None),
            }) + "\n")


def summarize_records(tmp_path, cells, results, criteria=None, baseline="a"):
    """The summary of a run written by :func:`write_records` (variants a and b)."""
    run_dir = RunDirectory(tmp_path / "run")
    write_records(run_dir, cells, results)
    return summarize_run(run_dir, variant_order=["a", "b"], pass_criteria=criteria or PassCriteria(), baseline_variant=baseline,
                         config_path="eval.yaml", config_hash="h", cases_total=2)


def toy_run(tmp_path, name, cells, results, pass_criteria=None, variants=("a", "b")):
    """A run folder ``name`` with its records, run.json and config.yaml (its pass criteria)."""
    run_dir = RunDirectory(tmp_path / name)
    write_records(run_dir, cells, results)
    (run_dir.path / "run.json").write_text(json.dumps({"run_id": name, "variants": list(variants)}))
    config = "eval: {name: toy}\n"
    if pass_criteria is not None:
        config += "pass_criteria:\n" + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in pass_criteria.items())
    (run_dir.path / "config.yaml").write_text(config)
    return run_dir


def results_of(outcomes):
    """``{(case, variant): {evaluator: outcome}}`` flattened for :func:`write_records`."""
    return {(c, v, e): o for (c, v), per in outcomes.items() for e, o in per.items()}


A_CELLS = {("c1", "a"): (100, None), ("c2", "a"): (100, None), ("c3", "a"): (100, None),
           ("c1", "b"): (200, None), ("c2", "b"): (200, None), ("c3", "b"): (200, None)}
A_RESULTS = results_of({("c1", "a"): {"x": "pass"}, ("c2", "a"): {"x": "pass"}, ("c3", "a"): {"x": "fail"},
                      ("c1", "b"): {"x": "pass"}, ("c2", "b"): {"x": "fail"}, ("c3", "b"): {"x": "fail"}})
