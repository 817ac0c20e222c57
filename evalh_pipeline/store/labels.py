"""An eval's human labels: one append-only JSONL file per eval, beside its baselines.

    <runs root>/labels/<eval>/labels.jsonl

Labels travel with the eval, not with one run. Lines are only ever appended (one write
each, store/jsonl.py); a torn last line is set aside on the next append. When a key is
labelled twice, the later line wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.store.jsonl import CorruptRecordError, JsonlAppender, iter_raw_lines

LABELS = "labels"


def labels_path(runs_root: Path, eval_name: str) -> Path:
    """The label file of ``eval_name`` under ``runs_root``."""
    return runs_root / LABELS / eval_name / "labels.jsonl"


def append_labels(runs_root: Path, eval_name: str, labels: Iterable[HumanLabel]) -> int:
    """Append ``labels`` (one line each) to the eval's label file; how many were written."""
    path = labels_path(runs_root, eval_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with JsonlAppender(path) as out:
        for label in labels:
            out.write(label.model_dump_json())
            written += 1
    return written


def read_labels(runs_root: Path, eval_name: str) -> dict[tuple[str, str, str], HumanLabel]:
    """The eval's labels by key (content hash, evaluator, evaluator hash), the latest winning."""
    path = labels_path(runs_root, eval_name)
    labels: dict[tuple[str, str, str], HumanLabel] = {}
    if not path.exists():
        return labels
    for number, line in iter_raw_lines(path):
        if not line.strip():
            continue
        try:
            label = HumanLabel.model_validate_json(line)
        except ValidationError as exc:
            raise CorruptRecordError(f"{path}:{number}: not a label ({exc.errors()[0]['msg']})") from None
        labels[label.key] = label
    return labels
