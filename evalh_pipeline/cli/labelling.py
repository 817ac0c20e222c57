"""`evalh label import`: add human labels of an eval's judged cells to its label store."""

from __future__ import annotations

import getpass
import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from evalh_pipeline.cli.group import EXIT_CONFIG, main
from evalh_pipeline.cli.shared import _load
from evalh_pipeline.terminal import error, say


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
    from evalh_pipeline.store.labels import append_labels, labels_path

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
    written = append_labels(runs_root, spec.name, resolution.labels)
    say(f"{written} of {len(rows)} label(s) matched a judged cell; stored in {labels_path(runs_root, spec.name)}")
