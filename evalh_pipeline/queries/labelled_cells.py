"""The judged cells of an eval's runs, keyed by what a human label is keyed by.

A cell's key is its trace's judged content hash (models/label.py) with the evaluator's name
and config hash; ``evalh label import`` resolves a label's cell to it, and the summary
pairs the labels with the judge's verdicts on every run of the eval (stats/calibration.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evalh_pipeline.models import EvaluationResult, Trace
from evalh_pipeline.models.label import HumanLabel, judged_content_hash
from evalh_pipeline.stats.calibration import ConfusionCounts
from evalh_pipeline.store.jsonl import iter_raw_lines, iter_records
from evalh_pipeline.store.results_store import entry_lines, read_store
from evalh_pipeline.store.run_dir import RunDirectory


@dataclass(frozen=True)
class JudgedCell:
    """One evaluator's verdict on one cell, with the key a label of it would have."""

    run_id: str
    case_id: str
    variant_name: str
    sample: int
    evaluator: str
    evaluator_hash: str
    passed: bool
    content_hash: str

    @property
    def key(self) -> tuple[str, str, str]:
        """The label key (content hash, evaluator, evaluator hash)."""
        return (self.content_hash, self.evaluator, self.evaluator_hash)


def eval_runs(runs_root: Path, eval_name: str) -> list[RunDirectory]:
    """The run directories of ``eval_name`` under ``runs_root`` (by run.json's ``eval_name``)
    that have traces, oldest first (by run.json's ``created_at``)."""
    if not runs_root.is_dir():
        return []
    runs = []
    for path in runs_root.iterdir():
        run = RunDirectory(path)
        if not (path.is_dir() and run.traces.exists()):
            continue
        try:
            meta = run.read_meta()
        except (OSError, ValueError):
            continue
        if meta.get("eval_name") == eval_name:
            runs.append((str(meta.get("created_at") or ""), path.name, run))
    return [run for *_, run in sorted(runs, key=lambda r: (r[0], r[1]))]


def _result_lines(run_dir: RunDirectory, evaluators: set[str] | None = None) -> Iterator[bytes]:
    """The run's result lines: of ``evaluators`` only when the run has a results store (one
    file per evaluator), else every line of results.jsonl."""
    entries = read_store(run_dir)
    if entries is None:
        if run_dir.results.exists():
            for _, line in iter_raw_lines(run_dir.results):
                yield line
        return
    for name, entry in entries.items():
        if evaluators is None or name in evaluators:
            yield from entry_lines(run_dir, entry)


def judged_cells(run_dir: RunDirectory) -> list[JudgedCell]:
    """Every evaluator's current verdict on every cell of ``run_dir`` that has a trace (the
    last trace and result of a cell win; results of evaluators that errored are left out:
    they are no verdict on the system)."""
    traces = {(t.case_id, t.variant_name, t.sample): judged_content_hash(t)
              for t in iter_records(run_dir.traces, Trace, "trace")}
    verdicts: dict[tuple[str, str, int, str], EvaluationResult] = {}
    for line in _result_lines(run_dir):
        result = EvaluationResult.model_validate_json(line)
        verdicts[(result.case_id, result.variant_name, result.sample, result.evaluator)] = result
    cells = []
    for (case_id, variant, sample, evaluator), result in verdicts.items():
        content = traces.get((case_id, variant, sample))
        if content is None or result.error is not None or result.evaluator_hash is None:
            continue
        cells.append(JudgedCell(run_dir.run_id, case_id, variant, sample, evaluator, result.evaluator_hash,
                                result.passed, content))
    return cells


def label_verdicts(runs_root: Path, labels: dict[tuple[str, str, str], HumanLabel],
                   known: set[tuple[str, str, str]]) -> list[JudgedCell]:
    """The judge's verdict on each labelled content not in ``known``, read from the results of
    the run the label was given on (the cell it names, with the evaluator's config hash).

    Only those runs' results are read, never their traces: the label already holds the
    content's hash, so no run's traces are hashed again to find it. A label whose cell has no
    verdict there any more (a deleted run, an evaluator that errored) is left out."""
    wanted: dict[str, dict[tuple[str, str, int, str], HumanLabel]] = {}
    for given in labels.values():
        if given.key not in known:
            cell = (given.case_id, given.variant_name, given.sample, given.evaluator)
            wanted.setdefault(given.run_id, {})[cell] = given
    cells: dict[tuple[str, str, str], JudgedCell] = {}
    for run_id, by_cell in wanted.items():
        run_dir = RunDirectory(runs_root / run_id)
        if not run_id or run_id in (".", "..") or "/" in run_id or not run_dir.path.is_dir():
            continue
        for line in _result_lines(run_dir, {evaluator for *_, evaluator in by_cell}):
            result = EvaluationResult.model_validate_json(line)
            label = by_cell.get((result.case_id, result.variant_name, result.sample, result.evaluator))
            if label is None or result.evaluator_hash != label.evaluator_hash:
                continue
            if result.error is not None:
                cells.pop(label.key, None)  # the last result of a cell wins: an error is no verdict
                continue
            cells[label.key] = JudgedCell(run_id, result.case_id, result.variant_name, result.sample, result.evaluator,
                                          label.evaluator_hash, result.passed, label.content_hash)
    return list(cells.values())


def confusion_by_evaluator(cells: list[JudgedCell],
                           labels: dict[tuple[str, str, str], HumanLabel]) -> dict[tuple[str, str], ConfusionCounts]:
    """(evaluator, evaluator hash) -> human x judge counts over the distinct labelled keys of
    ``cells`` (a content judged in several runs counts once, with its latest verdict)."""
    latest = {c.key: c.passed for c in cells if c.key in labels}
    pairs: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
    for key, judge in latest.items():
        pairs.setdefault((key[1], key[2]), []).append((labels[key].passed, judge))
    return {k: ConfusionCounts.of(v) for k, v in pairs.items()}
