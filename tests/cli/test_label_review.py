"""`evalh label review RUN --eval eval.yaml` on a real terminal: the judge's failures are asked
first, its verdict shows only after the answer, each answer is a label at once, labelled
content is not asked again, and the system's output cannot drive the terminal."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from evalh_pipeline.queries.labelled_cells import judged_cells
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.labels import read_labels
from evalh_pipeline.store.run_dir import RunDirectory
from tests.support.evalh_process import EVALH
from tests.support.evals import write_eval
from tests.support.paths import REPO
from tests.support.pty_terminal import run_on_terminal

HOSTILE = "\x1b]0;pwned\x07\x1b[2J Paris"  # retitle and clear the terminal


def _judged_run(tmp_path: Path) -> tuple[Path, Path]:
    eval_path = write_eval(tmp_path / "toy", cases=6)
    cases = eval_path.parent / "cases.jsonl"
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    rows[0]["input"]["answer"] = HOSTILE
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = load_eval(eval_path)
    run_dir = prepare_cases(spec, "first").run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    write_summary(spec, run_dir)
    return eval_path, run_dir.path


def test_failures_come_first_the_verdict_shows_after_the_answer_and_each_answer_is_a_label(tmp_path):
    import os

    eval_path, run_dir = _judged_run(tmp_path)
    prompt = b"pass? [y/n/s/q] "
    done = run_on_terminal([*EVALH, "label", "review", str(run_dir), "--eval", str(eval_path), "--by", "ana",
                            "--evaluator", "mentions_paris", "--limit", "4"], env=dict(os.environ), cwd=REPO,
                           timeout=300, replies=[(prompt, b"n wrong city\r"), (prompt, b"maybe\r"),
                                                 (prompt, b"y\r"), (prompt, b"s\r"), (prompt, b"y\r")])
    text = done.text
    assert done.returncode == 0, text
    assert "4 cell(s) of first to label" in text
    # The stub's candidate fails every third case: those come first, marked so.
    assert "(failed)" in text.split("[2/4]")[0] and "(sampled)" in text.split("[4/4]")[1]
    # Blind: nothing of the verdict before the first answer.
    first = text.split("[1/4]")[1]
    assert first.index("pass? [y/n/s/q]") < first.index("judge: failed")
    assert first.index("pass? [y/n/s/q]") < first.index("(failed)")  # why it was asked tells the verdict too
    assert "judge: failed — you agree" in first
    assert "y: it passes" in text.split("[2/4]")[1]  # an answer it cannot read: the keys again
    assert "3 label(s) stored" in text  # n, y, (skip), y
    labels = sorted(read_labels(eval_path.parent / "runs", "toy").values(), key=lambda x: x.labelled_at)
    assert [(x.passed, x.note, x.labeller) for x in labels][0] == (False, "wrong city", "ana")
    assert len(labels) == text.count("judge: ")
    # The system's answer is shown, its control characters as escapes, never sent to the terminal.
    assert b"\x1b]0;pwned" not in done.raw and b"\x1b[2J" not in done.raw

    # The same reviewer again (her own disagreements with the judge are not asked back).
    again = run_on_terminal([*EVALH, "label", "review", str(run_dir), "--eval", str(eval_path), "--by", "ana",
                             "--evaluator", "mentions_paris", "--limit", "50"], env=dict(os.environ), cwd=REPO,
                            timeout=300, replies=[(prompt, b"q\r")])
    assert again.returncode == 0, again.text
    # Labelled content is not asked again (two variants with the same answer are one content).
    distinct = {c.key for c in judged_cells(RunDirectory(run_dir)) if c.evaluator == "mentions_paris"}
    assert f"{len(distinct) - len(labels)} cell(s) of first to label" in again.text
    assert "0 label(s) stored" in again.text
