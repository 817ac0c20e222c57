"""Read a run folder from Python: its header, cases, traces, results and summary.

The public read API of a run (in the spirit of ``inspect_ai.log``), over the store's own
codecs, so a record reads here exactly as the engine reads it (schema migration included)::

    from evalh_pipeline import open_run

    run = open_run("runs/toy-20260101T000000Z-ab12")
    print(run.run_id, run.meta()["eval_name"])
    for trace in run.traces():
        print(trace.case_id, trace.variant_name, trace.output.final_answer)
    passed = sum(result.passed for result in run.results())
    summary = run.summary()  # RunSummary: per-variant pass rates, deltas against the baseline

Records stream from the files (a run may hold many thousands of traces). ``traces()`` yields
every trace line in file order: a cell that ran again (``evalh retry-failed``, a resumed run)
appends a new trace, and the last trace of a cell is its current one. ``results()`` is the
current results file, one result per (trace, evaluator). A torn last line (a killed writer)
is not a record and is skipped. An eval-harness 2.0.2 run folder reads the same way.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh_pipeline.common.yaml_files import load_yaml_text
from evalh_pipeline.errors import UserError
from evalh_pipeline.models import EvalCase, EvaluationResult, RunSummary, Trace
from evalh_pipeline.models.versioning import migrate
from evalh_pipeline.store.records import CASES, RESULTS, TRACES
from evalh_pipeline.store.run_dir import RunDirectory


class NotARunFolder(UserError, FileNotFoundError):
    """The path is not a run folder: no run.json, and not an eval-harness run either."""


@dataclass(frozen=True)
class RunFolder:
    """One run folder, read on demand: nothing is read until a method asks for it."""

    directory: RunDirectory

    @property
    def path(self) -> Path:
        """The run folder."""
        return self.directory.path

    @property
    def run_id(self) -> str:
        """The run's id (the folder's name)."""
        return self.directory.run_id

    def meta(self) -> dict[str, Any]:
        """run.json: what produced the run (eval name, eval.yaml path, created_at, variants...)."""
        return self.directory.read_meta()

    def cases(self) -> Iterator[EvalCase]:
        """The run's selected cases, as run (empty for an eval-harness run, which kept none)."""
        if not self.directory.cases.exists():
            return iter(())
        return CASES.iter_file(self.directory.cases)

    def traces(self) -> Iterator[Trace]:
        """Every trace line in file order; the last trace of a cell is its current one."""
        if not self.directory.traces.exists():
            return iter(())
        return TRACES.iter_file(self.directory.traces)

    def results(self) -> Iterator[EvaluationResult]:
        """The current results, one per (trace, evaluator); none before the run was judged."""
        if not self.directory.results.exists():
            return iter(())
        return RESULTS.iter_file(self.directory.results)

    def summary(self) -> RunSummary:
        """summary.yaml (raises :class:`FileNotFoundError` before the run was summarized)."""
        return read_summary(self.directory)


def open_run(path: str | os.PathLike[str]) -> RunFolder:
    """The run folder at ``path``; raises :class:`NotARunFolder` for any other path."""
    directory = RunDirectory(Path(path))
    if not directory.exists():
        raise NotARunFolder(f"{path} is not a run folder (no run.json, and not an eval-harness run)")
    return RunFolder(directory)


def read_summary(run_dir: RunDirectory) -> RunSummary:
    """A run's summary.yaml, migrated to the current schema."""
    raw = load_yaml_text(run_dir.summary.read_text(encoding="utf-8"))
    return RunSummary.model_validate(migrate("summary", raw, what=str(run_dir.summary)))


__all__ = ["NotARunFolder", "RunFolder", "open_run", "read_summary"]
