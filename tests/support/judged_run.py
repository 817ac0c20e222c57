"""A run of the tests' toy eval (tests/conftest.py ``write_eval``), traced and judged in-process
with its summary written: the cells a review queue asks about and labels are given on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path

from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import RunDirectory
from tests.conftest import write_eval


def judged_run(folder: Path, run_id: str, *, cases: int = 6, answers: Mapping[str, str] | None = None
               ) -> tuple[Path, RunDirectory]:
    """The eval.yaml in ``folder`` (made there) and its judged run ``run_id`` under
    ``folder/runs``. ``answers``: case id -> the answer the stub system gives (e.g. hostile text)."""
    eval_path = write_eval(folder, cases=cases)
    if answers:
        path = eval_path.parent / "cases.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            if row["id"] in answers:
                row["input"]["answer"] = answers[row["id"]]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = load_eval(eval_path)
    run_dir = prepare_cases(spec, run_id).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    write_summary(spec, run_dir)
    return eval_path, run_dir
