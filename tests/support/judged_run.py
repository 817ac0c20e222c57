"""A run of the tests' toy eval (tests/conftest.py ``write_eval``), traced and judged in-process
with its summary written: the cells a review queue asks about and labels are given on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.queries.labelled_cells import judged_cells

from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.labels import append_labels
from evalh_pipeline.store.run_dir import RunDirectory
from tests.support.evals import write_eval


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


def label_every_cell(run_dir: RunDirectory, eval_name: str, evaluator: str, *, failed_too: int = 2) -> int:
    """Label every judged content of ``evaluator`` in ``run_dir`` as the judge did, except the
    first ``failed_too`` of its passes, labelled failures (a judge that passes too much); how
    many labels were written."""
    cells = {c.key: c for c in judged_cells(run_dir) if c.evaluator == evaluator}
    flipped = {c.key for c in [c for c in cells.values() if c.passed][:failed_too]}
    now = datetime(2026, 11, 1, tzinfo=timezone.utc)
    return append_labels(run_dir.path.parent, eval_name, [
        HumanLabel(content_hash=c.content_hash, evaluator=c.evaluator, evaluator_hash=c.evaluator_hash,
                   passed=c.passed and c.key not in flipped, labeller="ana", labelled_at=now, case_id=c.case_id,
                   variant_name=c.variant_name, sample=c.sample, run_id=c.run_id) for c in cells.values()])
