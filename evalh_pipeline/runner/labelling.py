"""`evalh label import` and `evalh label review`: human labels of judged cells.

`import` reads a file of labels and resolves each row to a judged cell; `review` (on the
terminal, and the viewer's review queue) picks the cells of one run a person should label
next (:func:`review_queue`).

A row names a cell of the eval's existing runs (``case_id``, ``variant_name``, ``sample``)
and an evaluator; it is resolved to that cell's judged content in the latest run that has
the evaluator's verdict on it (queries/labelled_cells.py), and stored under that content's
key (models/label.py), so it applies to every run with the same trace content.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from evalh_pipeline.errors import UserError
from evalh_pipeline.models import Trace
from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.queries.labelled_cells import JudgedCell, eval_runs, judged_cells
from evalh_pipeline.store.jsonl import iter_records
from evalh_pipeline.store.run_dir import RunDirectory

COLUMNS = ("case_id", "variant_name", "sample", "evaluator", "passed", "note")
REQUIRED = ("case_id", "variant_name", "evaluator", "passed")


class LabelFileError(UserError, ValueError):
    """Rows of a label file that are not labels: one line each (file:line: what is wrong)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class LabelRow:
    """One valid row of a label file."""

    line: int
    case_id: str
    variant_name: str
    sample: int
    evaluator: str
    passed: bool
    note: str | None


def _raw_rows(path: Path) -> list[tuple[int, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        return [(reader.line_num, row) for row in reader]
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            rows.append((number, f"not JSON ({exc.msg})"))
    return rows


def _passed(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _row(path: Path, number: int, raw: Any, evaluators: set[str]) -> LabelRow | str:
    where = f"{path}:{number}"
    if isinstance(raw, str):
        return f"{where}: {raw}"
    if not isinstance(raw, dict):
        return f"{where}: not an object with the columns {', '.join(COLUMNS)}"
    unknown = sorted(str(k) for k in raw if k not in COLUMNS)
    if unknown:
        return f"{where}: unknown column {unknown[0]!r} (allowed: {', '.join(COLUMNS)})"
    for key in REQUIRED:
        if raw.get(key) in (None, ""):
            return f"{where}: {key}: missing (required: {', '.join(REQUIRED)})"
    for key in ("case_id", "variant_name", "evaluator"):
        if not isinstance(raw[key], str):
            return f"{where}: {key}: must be text"
    if raw["evaluator"] not in evaluators:
        return f"{where}: evaluator: {raw['evaluator']!r} is not an evaluator of the eval ({', '.join(sorted(evaluators))})"
    passed = _passed(raw["passed"])
    if passed is None:
        return f"{where}: passed: {raw['passed']!r} (allowed: true, false)"
    sample_raw = raw.get("sample")
    try:
        sample = 0 if sample_raw in (None, "") else int(sample_raw)
        if isinstance(sample_raw, (bool, float)) or sample < 0:
            raise ValueError
    except (TypeError, ValueError):
        return f"{where}: sample: {sample_raw!r} (allowed: a whole number >= 0)"
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        return f"{where}: note: must be text"
    return LabelRow(number, raw["case_id"], raw["variant_name"], sample, raw["evaluator"], passed, note or None)


def read_label_rows(path: Path, evaluators: set[str]) -> list[LabelRow]:
    """The rows of a CSV or JSONL label file; :class:`LabelFileError` with one line per bad
    row when any row is bad (so nothing is written unless every row is valid)."""
    try:
        raws = _raw_rows(path)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise LabelFileError([f"{path}: cannot read ({exc})"]) from None
    rows, problems = [], []
    for number, raw in raws:
        row = _row(path, number, raw, evaluators)
        if isinstance(row, str):
            problems.append(row)
        else:
            rows.append(row)
    if problems:
        raise LabelFileError(problems)
    return rows


@dataclass(frozen=True)
class Resolution:
    """The labels the rows resolved to, and one line per row that names no judged cell."""

    labels: list[HumanLabel]
    unmatched: list[str]


def resolve_rows(path: Path, rows: list[LabelRow], runs_root: Path, eval_name: str, *,
                 labeller: str, now: datetime) -> Resolution:
    """Each row as a label of its cell's judged content, in the latest run of the eval that
    has the evaluator's verdict on that cell."""
    cells: dict[tuple[str, str, int, str], JudgedCell] = {}
    for run in eval_runs(runs_root, eval_name):  # oldest first: later runs win
        for judged in judged_cells(run):
            cells[(judged.case_id, judged.variant_name, judged.sample, judged.evaluator)] = judged
    labels: list[HumanLabel] = []
    unmatched: list[str] = []
    for row in rows:
        cell = cells.get((row.case_id, row.variant_name, row.sample, row.evaluator))
        if cell is None:
            unmatched.append(f"{path}:{row.line}: no run of {eval_name} has a verdict of {row.evaluator} on case "
                             f"{row.case_id!r}, variant {row.variant_name!r}, sample {row.sample}")
            continue
        labels.append(HumanLabel(content_hash=cell.content_hash, evaluator=cell.evaluator,
                                 evaluator_hash=cell.evaluator_hash, passed=row.passed, labeller=labeller,
                                 labelled_at=now, note=row.note, case_id=row.case_id,
                                 variant_name=row.variant_name, sample=row.sample, run_id=cell.run_id))
    return Resolution(labels, unmatched)


@dataclass(frozen=True)
class ReviewItem:
    """One cell to label in a review: its judged verdict (hidden until the reviewer answers),
    why it is in the queue, and what the reviewer reads (the case's input and the answer)."""

    cell: JudgedCell
    reason: str  # one of REASONS
    input: Any
    answer: str | None


# In the order they are asked: the judge's failures, flaky cells (passed, while another sample
# of the same case, variant and evaluator failed), content someone else labelled against the
# judge's verdict (a second opinion), then a seeded random sample of the passes.
REASONS = ("failed", "flaky", "disagreed", "sampled")


def _sample_rank(seed: int, cell: JudgedCell) -> str:
    """A cell's place in the random sample: a hash of the seed and its key, so labelling one
    cell never reshuffles the others (the queue a reviewer sees stays put as it shrinks)."""
    return hashlib.sha256(f"{seed}\0{chr(0).join(cell.key)}".encode()).hexdigest()


def queue_order(cells: list[JudgedCell], labels: dict[tuple[str, str, str], HumanLabel], *,
                labeller: str | None = None, limit: int = 20, seed: int = 0) -> list[tuple[JudgedCell, str]]:
    """The cells to label next and why (one of :data:`REASONS`), at most ``limit``, one per
    judged content, in :data:`REASONS` order (within a reason: by case, variant, evaluator and
    sample; the sample by ``seed``). Labelled content is left out, except content whose
    latest label disagrees with the judge and was given by someone other than ``labeller``."""
    def disagreed(cell: JudgedCell) -> bool:
        label = labels.get(cell.key)
        return label is not None and label.passed != cell.passed and label.labeller != labeller

    order = sorted(cells, key=lambda c: (c.case_id, c.variant_name, c.evaluator, c.sample))
    open_ = [c for c in order if c.key not in labels]
    failed_groups = {(c.case_id, c.variant_name, c.evaluator) for c in open_ if not c.passed}
    failed = [c for c in open_ if not c.passed]
    flaky = [c for c in open_ if c.passed and (c.case_id, c.variant_name, c.evaluator) in failed_groups]
    second = [c for c in order if disagreed(c)]
    rest = sorted((c for c in open_ if c.passed and (c.case_id, c.variant_name, c.evaluator) not in failed_groups),
                  key=lambda c: _sample_rank(seed, c))
    chosen: list[tuple[JudgedCell, str]] = []
    seen: set[tuple[str, str, str]] = set()  # one question per judged content
    for reason, group in zip(REASONS, (failed, flaky, second, rest)):
        for cell in group:
            if len(chosen) < limit and cell.key not in seen:
                seen.add(cell.key)
                chosen.append((cell, reason))
    return chosen


def review_queue(run_dir: RunDirectory, labels: dict[tuple[str, str, str], HumanLabel], *,
                 evaluator: str | None = None, labeller: str | None = None, limit: int = 20,
                 seed: int = 0) -> list[ReviewItem]:
    """The cells of ``run_dir`` a person (``labeller``) should label next, at most ``limit``,
    in :func:`queue_order`, with the case's input and the answer each shows."""
    cells = [c for c in judged_cells(run_dir) if evaluator is None or c.evaluator == evaluator]
    chosen = queue_order(cells, labels, labeller=labeller, limit=limit, seed=seed)
    wanted = {(c.case_id, c.variant_name, c.sample) for c, _ in chosen}
    shown: dict[tuple[str, str, int], Trace] = {}
    for record in iter_records(run_dir.traces, Trace, "trace"):  # streamed; the last trace of a cell wins
        key = (record.case_id, record.variant_name, record.sample)
        if key in wanted:
            shown[key] = record
    items = []
    for cell, reason in chosen:
        trace = shown.get((cell.case_id, cell.variant_name, cell.sample))
        items.append(ReviewItem(cell, reason, trace.input if trace else None,
                                trace.output.final_answer if trace else None))
    return items


def label_of(cell: JudgedCell, passed: bool, note: str | None, *, labeller: str, now: datetime) -> HumanLabel:
    """The label a reviewer's answer on ``cell`` (a review item's) makes."""
    return HumanLabel(content_hash=cell.content_hash, evaluator=cell.evaluator, evaluator_hash=cell.evaluator_hash,
                      passed=passed, labeller=labeller, labelled_at=now, note=note, case_id=cell.case_id,
                      variant_name=cell.variant_name, sample=cell.sample, run_id=cell.run_id)
