"""`evalh label import FILE --eval eval.yaml`: rows resolve to judged cells of the eval's runs,
bad rows are refused one line each with nothing written, and a label carries to a later run
with the same answer."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.queries.labelled_cells import eval_runs, judged_cells
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.labels import labels_path, read_labels
from tests.support.evalh_process import EVALH
from tests.support.evals import write_eval
from tests.support.paths import REPO


def _run(path: Path, name: str) -> None:
    spec = load_eval(path)
    run_dir = prepare_cases(spec, name).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    write_summary(spec, run_dir)


def _import(file: Path, eval_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*EVALH, "label", "import", str(file), "--eval", str(eval_path), "--by", "ana"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def test_import_matches_cells_and_reports_the_unmatched(tmp_path):
    eval_path = write_eval(tmp_path / "toy", cases=6)
    _run(eval_path, "first")
    file = tmp_path / "labels.csv"
    file.write_text("case_id,variant_name,sample,evaluator,passed,note\n"
                    "case_0,candidate,0,mentions_paris,false,wrong city\n"
                    "case_1,base,,mentions_paris,true,\n"
                    "case_9,base,0,mentions_paris,true,\n")
    done = _import(file, eval_path)
    assert done.returncode == 0, done.stderr
    assert f"unmatched {file}:4: no run of toy has a verdict of mentions_paris on case 'case_9'" in done.stdout
    assert "2 of 3 label(s) matched a judged cell" in done.stdout
    labels = read_labels(tmp_path / "toy" / "runs", "toy")
    stored = sorted(labels.values(), key=lambda label: label.case_id)
    assert [(x.case_id, x.variant_name, x.passed, x.note, x.labeller) for x in stored] == [
        ("case_0", "candidate", False, "wrong city", "ana"), ("case_1", "base", True, None, "ana")]


def test_bad_rows_are_refused_one_line_each_and_nothing_is_written(tmp_path):
    eval_path = write_eval(tmp_path / "toy", cases=3)
    _run(eval_path, "first")
    file = tmp_path / "labels.jsonl"
    file.write_text("\n".join([
        json.dumps({"case_id": "case_0", "variant_name": "base", "evaluator": "mentions_paris", "passed": True}),
        json.dumps({"case_id": "case_1", "variant_name": "base", "evaluator": "mentions_paris", "passed": "maybe"}),
        json.dumps({"case_id": "case_2", "variant_name": "base", "evaluator": "no_such", "passed": False}),
        "{not json",
    ]) + "\n")
    done = _import(file, eval_path)
    assert done.returncode != 0
    assert f"{file}:2: passed: 'maybe' (allowed: true, false)" in done.stderr
    assert f"{file}:3: evaluator: 'no_such' is not an evaluator of the eval" in done.stderr
    assert f"{file}:4: not JSON" in done.stderr
    assert "3 bad row(s); no label written" in done.stderr
    assert not labels_path(tmp_path / "toy" / "runs", "toy").exists()


def test_a_label_carries_to_a_new_run_with_the_same_answer(tmp_path):
    eval_path = write_eval(tmp_path / "toy", cases=3)
    _run(eval_path, "first")
    file = tmp_path / "labels.csv"
    file.write_text("case_id,variant_name,evaluator,passed\ncase_1,base,mentions_paris,false\n")
    assert _import(file, eval_path).returncode == 0
    _run(eval_path, "second")
    labels = read_labels(tmp_path / "toy" / "runs", "toy")
    first, second = eval_runs(tmp_path / "toy" / "runs", "toy")
    (label,) = labels.values()
    assert isinstance(label, HumanLabel) and label.run_id == first.run_id
    carried = sorted((c.run_id, c.case_id, c.variant_name) for c in judged_cells(second) if c.key in labels)
    # `candidate` answers case_1 as `base` does (it breaks every third case from case_0):
    # the label is on the content, so it applies to that cell too.
    assert carried == [(second.run_id, "case_1", "base"), (second.run_id, "case_1", "candidate")]
