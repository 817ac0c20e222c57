"""The parity registry and the scripted answers the openai/evals tests share (the verdicts'
sources: tests/importers/openai_evals/test_verdict_parity.py's docstring)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from evalh_pipeline.common.settings import Settings
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id

REGISTRY = Path(__file__).parent / "registry"  # evals/parity.yaml, data/parity/: written here

# prompt (the last message) -> the model's answer, and the verdicts of
# (Match, Includes, Includes ignore_case, FuzzyMatch) for the sample's ideal (data/parity/samples.jsonl).
SCRIPT = [
    ("q1", "Paris is the capital.", (True, True, True, True)),             # ideal "Paris"
    ("q2", "The capital is Paris", (False, True, True, True)),             # not at the start
    ("q3", "paris", (False, False, True, True)),                           # case differs
    ("q4", "Paris, France", (True, True, True, True)),                     # ideals ["Lyon", "Paris"]: the second
    ("q5", "An answer: the Eiffel Tower!", (False, False, True, True)),   # "eiffel tower": normalized, contained
    ("q6", " Paris", (False, True, True, True)),                           # a leading space: startswith fails
    ("q7", "the", (False, False, False, True)),                            # ideal "a": both normalize to ""
    ("q8", "Rome", (False, False, False, False)),
    ("q9", "Paris", (False, False, False, True)),                          # the ideal contains the answer
    ("q10", "Paris\u2014France", (False, False, False, False)),            # an em dash is not ASCII punctuation
    ("q11", "\u00dcn\u00efcode ANSWER", (False, False, True, True)),       # "ünïcode answer": str.lower() folds it
    ("q12", "(a.b)", (False, False, False, True)),                         # ideal "ab": punctuation removed
    ("q13 asked as a text prompt", "Paris", (True, True, True, True)),   # input is a string
    ("q14", "Paris", (False, False, False, None)),                         # ideal []: nothing to match
]


def run_imported(eval_path: Path, env: dict[str, str]) -> dict[int, dict[str, Any]]:
    """Run an imported registry eval as `evalh run` does with ``env`` set (the grading
    evaluator reads it at run time); its results by sample index (``sample-<n>``). Every
    trace must have its answer."""
    spec = load_eval(eval_path, settings=Settings.from_environment({**os.environ, **env}))
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    traces = [json.loads(line) for line in info.run_dir.traces.read_text().splitlines()]
    assert traces and all(t["error"] is None for t in traces)
    results = [json.loads(line) for line in info.run_dir.results.read_text().splitlines()]
    return {int(r["case_id"].removeprefix("sample-")): r for r in results}
