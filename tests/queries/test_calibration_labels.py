"""A summary pools the labels of every run's content while reading the labels once and, for
content the run does not have, only the results of the run each label was given on."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path

from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.queries.calibration import run_calibration
from evalh_pipeline.queries.labelled_cells import judged_cells
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.labels import append_labels
from evalh_pipeline.store.run_dir import RunDirectory
from tests.conftest import write_eval

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _run(eval_path: Path, run_id: str, take: str) -> RunDirectory:
    cases = eval_path.parent / "cases.jsonl"
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    for row in rows:
        row["input"]["answer"] = f"answer {row['id']} Paris, {take}"
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = load_eval(eval_path)
    run_dir = prepare_cases(spec, run_id).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    return run_dir


def _label_all(runs: Path, run_dir: RunDirectory, evaluator: str) -> int:
    cells = {c.key: c for c in judged_cells(run_dir) if c.evaluator == evaluator}
    return append_labels(runs, "toy", [
        HumanLabel(content_hash=c.content_hash, evaluator=c.evaluator, evaluator_hash=c.evaluator_hash,
                   passed=c.passed != (i % 5 == 0), labeller="ana", labelled_at=NOW, case_id=c.case_id,
                   variant_name=c.variant_name, sample=c.sample, run_id=c.run_id)
        for i, c in enumerate(cells.values())])


def test_labels_of_other_runs_content_count_from_their_results_alone(tmp_path):
    eval_path = write_eval(tmp_path / "toy", cases=12)
    runs = eval_path.parent / "runs"
    old = _run(eval_path, "old", "first take")
    new = _run(eval_path, "new", "second take")
    labelled = _label_all(runs, old, "mentions_paris")
    # The old run's content is not the new run's: its labels reach the new summary only through
    # the old run's verdicts, read from its results (its traces are not needed any more).
    assert not {c.key for c in judged_cells(old)} & {c.key for c in judged_cells(new)}
    old.traces.unlink()
    found = run_calibration(new, runs, "toy", "base")
    assert set(found) == {"mentions_paris"}
    calibration = found["mentions_paris"].calibration
    assert calibration.labels == labelled
    # One label in five says the opposite of the judge.
    assert calibration.agreement == sum(i % 5 != 0 for i in range(labelled)) / labelled
    variants = found["mentions_paris"].by_variant
    assert (variants["base"].judged, variants["candidate"].judged) == (12, 12)
    assert variants["base"].delta is None


def test_an_eval_without_labels_has_no_calibration(tmp_path):
    eval_path = write_eval(tmp_path / "toy", cases=3)
    run = _run(eval_path, "only", "take")
    assert run_calibration(run, eval_path.parent / "runs", "toy", "base") == {}
