"""`evalh label import` and `evalh label review`: add human labels of an eval's judged cells
to its label store, from a file or one by one on the terminal."""

from __future__ import annotations

import getpass
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalh_pipeline.cli.group import EXIT_CONFIG, main
from evalh_pipeline.cli.shared import _load
from evalh_pipeline.terminal import error, escape_control, say

if TYPE_CHECKING:
    from evalh_pipeline.config import EvalSpec


@main.group()
def label() -> None:
    """Human labels of judged cells: they calibrate the judges in every later summary."""


@label.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--eval", "eval_path", type=click.Path(), required=True, help="The eval.yaml the labels belong to.")
@click.option("--by", "labeller", help="Who labelled (default: the current user).")
def import_labels(file: str, eval_path: str, labeller: str | None) -> None:
    """Import labels from FILE (CSV or JSONL; columns case_id, variant_name, sample, evaluator,
    passed, note). Nothing is written unless every row is valid."""
    from evalh_pipeline.runner.labelling import LabelFileError, read_label_rows, resolve_rows
    from evalh_pipeline.outputs.published_labels import add_labels

    spec = _load(eval_path)
    path = Path(file)
    try:
        rows = read_label_rows(path, {e.name for e in spec.config.evaluators})
    except LabelFileError as exc:
        for problem in exc.problems:
            error(problem)
        error(f"{path}: {len(exc.problems)} bad row(s); no label written")
        sys.exit(EXIT_CONFIG)
    runs_root = Path(spec.runs_root)
    resolution = resolve_rows(path, rows, runs_root, spec.name, labeller=labeller or getpass.getuser(),
                              now=datetime.now(timezone.utc))
    for line in resolution.unmatched:
        say(f"unmatched {line}")
    written = add_labels(spec, resolution.labels)
    say(f"{written} of {len(rows)} label(s) matched a judged cell; stored in {_stored_in(spec)}")


ANSWER_HELP = "y: it passes · n: it fails · s: skip · q: quit (a note may follow: `n wrong city`)"
SHOWN_CHARS = 2000  # of an answer; the rest is counted, not shown


@label.command("review")
@click.argument("run")
@click.option("--eval", "eval_path", type=click.Path(), required=True, help="The eval.yaml the run belongs to.")
@click.option("--evaluator", help="Only this evaluator's verdicts (default: every evaluator's).")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Cells to ask about.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random sample of passed cells.")
@click.option("--by", "labeller", help="Who labels (default: the current user).")
def review(run: str, eval_path: str, evaluator: str | None, limit: int, seed: int, labeller: str | None) -> None:
    """Label a run's judged cells one by one on the terminal: the judge's failures first,
    then flaky cells, then content someone else labelled against the judge, then a random
    sample of its passes. Blind: the judge's verdict is shown
    only after you answer (and so is why a cell was asked). Each answer is stored at once (Ctrl-C keeps what you labelled)."""
    from evalh_pipeline.cli.shared import _run_directory
    from evalh_pipeline.runner.labelling import label_of, review_queue
    from evalh_pipeline.store.labels import read_labels
    from evalh_pipeline.outputs.published_labels import add_labels, pull_labels

    spec = _load(eval_path)
    names = {e.name for e in spec.config.evaluators}
    if evaluator is not None and evaluator not in names:
        error(f"--evaluator: {evaluator!r} is not an evaluator of {spec.name} ({', '.join(sorted(names))})")
        sys.exit(EXIT_CONFIG)
    run_dir = _run_directory(run)
    if run_dir.read_meta().get("eval_name") != spec.name:
        error(f"{run_dir.path}: not a run of {spec.name} (run.json eval_name: {run_dir.read_meta().get('eval_name')!r})")
        sys.exit(EXIT_CONFIG)
    runs_root = Path(spec.runs_root)
    who = labeller or getpass.getuser()
    pull_labels(spec)  # labelled on other machines too, for an eval that publishes to a URL
    queue = review_queue(run_dir, read_labels(runs_root, spec.name), evaluator=evaluator, labeller=who, limit=limit,
                         seed=seed)
    if not queue:
        say(f"nothing to label in {run_dir.run_id}: every judged cell's content has a label")
        return
    say(f"{len(queue)} cell(s) of {run_dir.run_id} to label. {ANSWER_HELP}")
    written = agreed = 0
    for number, item in enumerate(queue, start=1):
        cell = item.cell
        say("")
        say(f"[{number}/{len(queue)}] case {escape_control(cell.case_id)} · variant {escape_control(cell.variant_name)}"
            f" · evaluator {cell.evaluator} · sample {cell.sample}")
        say(f"input: {_shown(json.dumps(item.input, ensure_ascii=False))}")
        say(f"answer: {_shown(item.answer) if item.answer is not None else '(none)'}")
        answer = _ask()
        if answer is None:
            break
        if isinstance(answer, str):  # "skip"
            continue
        passed, note = answer
        add_labels(spec, [label_of(item.cell, passed, note, labeller=who, now=datetime.now(timezone.utc))])
        written += 1
        agreed += passed == cell.passed
        verdict = "passed" if cell.passed else "failed"
        # Why the cell was asked (a failure, flaky...) tells its verdict: shown only after the answer too.
        say(f"judge: {verdict} — you {'agree' if passed == cell.passed else 'disagree'} ({item.reason})")
    say("")
    say(f"{written} label(s) stored in {_stored_in(spec)}; "
        f"you agreed with the judge on {agreed} of {written}")


def _stored_in(spec: EvalSpec) -> str:
    """Where the eval's labels are kept: the file at its canonical URL, else beside its runs."""
    from evalh_pipeline.store.labels import labels_path
    from evalh_pipeline.outputs.published_labels import published_labels_url
    from evalh_pipeline.outputs.publishing import RunPublisher

    canonical = RunPublisher.for_spec(spec).canonical
    return published_labels_url(canonical, spec.name) if canonical else str(labels_path(Path(spec.runs_root), spec.name))


def _shown(text: str) -> str:
    text = escape_control(text)  # the system's output: it must not drive the terminal
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS]} … ({len(text) - SHOWN_CHARS} more characters)"


def _ask() -> tuple[bool, str | None] | str | None:
    """The reviewer's answer: (passed, note), "skip", or None to stop (q, end of input)."""
    while True:
        try:
            line = input("pass? [y/n/s/q] ").strip()
        except EOFError:
            return None
        word, _, note = line.partition(" ")
        word = word.lower()
        if word in ("y", "yes", "n", "no"):
            return word.startswith("y"), note.strip() or None
        if word in ("s", "skip"):
            return "skip"
        if word in ("q", "quit"):
            return None
        say(ANSWER_HELP)
