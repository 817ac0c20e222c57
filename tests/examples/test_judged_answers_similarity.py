"""The judged_answers example's semantic_similarity evaluator: offline, with the judge down."""

from __future__ import annotations

import asyncio
import json
import socket

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.paths import REPO


def test_the_example_scores_answers_against_its_reference_without_any_server(tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        monkeypatch.setenv("EVALH_JUDGE_URL", f"http://127.0.0.1:{s.getsockname()[1]}")  # nothing listens
    monkeypatch.chdir(tmp_path)
    spec = load_eval(REPO / "evals" / "judged_answers" / "eval.yaml")
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    results = [json.loads(line) for line in (run_dir.path / "results.jsonl").read_text().splitlines()]
    similar = {(r["variant_name"], r["case_id"]): r for r in results if r["evaluator"] == "reads_like_a_comparison"}
    assert len(similar) == 10 and all(r["error"] is None for r in similar.values())
    # The terse prompt answers Richmond listings with a bare price: lexically far from a comparison.
    assert sorted(key for key, r in similar.items() if not r["passed"]) == [
        ("advisor_terse", "richmond_abc123"), ("advisor_terse", "richmond_mno345")]
    detail = similar[("advisor_v1", "carlton_ghi789")]["detail"]
    assert detail["embedder"] == "hashing" and detail["threshold"] == 0.4 and detail["similarity"] > 0.4
