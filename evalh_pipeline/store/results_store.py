"""The results store: one file per evaluator, and results.jsonl made from them.

    results/store.json                   {"format": 1, "evaluators": {name: entry}} (EvaluatorEntry)
    results/<evaluator>-<digest>.jsonl   one evaluator's results, named by their content hash
    results.jsonl                        the store's files one after another: the file users
                                         and eval-harness tools read

Every result line records the ``trace_hash`` of the trace line it judged and its
evaluator's config hash (``evaluator_hash``); a result is current while both still match
(runner/evaluation.py decides what to judge). An entry of ``store.json`` also records the
digest of the traces file's complete lines (store/jsonl.py ``complete_lines_digest``) for
which every result of the evaluator was current when the file was written: while that
digest and the config hash are unchanged, nothing of that evaluator needs a look.

Writes never change a file in place. An evaluator judged again gets a new file (under a
new name: its content hash), then results.jsonl is replaced, then store.json, then the
files store.json no longer names are removed; each step a rename. A process killed at any
point leaves store.json naming complete files, and the next writer (holding the run's
lock) removes what was left over. Only the run's lock holder writes here.

A run written before the store existed (or by eval-harness) has results.jsonl only: its
lines are read as candidate results (:func:`legacy_results`), and current only if they
carry both hashes and they match.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalh_pipeline.store.jsonl import FileDigest, iter_raw_lines, set_aside_torn_tail, write_concatenation
from evalh_pipeline.store.run_dir import RunDirectory

# Bumped when what store.json or the files mean changes: a store of another format is not
# read (its results are judged again).
FORMAT = 1


@dataclass(frozen=True)
class EvaluatorEntry:
    """One evaluator's results in the store."""

    file: str  # its file's name in results/
    evaluator_hash: str | None  # the config hash every result of the file was judged with
    traces: str  # digest of the traces for which every result was current ("": not known)
    results: int  # its lines


def read_store(run_dir: RunDirectory) -> dict[str, EvaluatorEntry] | None:
    """Evaluator -> its entry, in order; None when the run has no usable store (none, of
    another format, damaged, or naming a file that is gone)."""
    try:
        data = json.loads(run_dir.results_manifest.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        entries = {str(name): EvaluatorEntry(**fields) for name, fields in data["evaluators"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if not all((run_dir.results_store / e.file).is_file() and "/" not in e.file for e in entries.values()):
        return None
    return entries


def entry_lines(run_dir: RunDirectory, entry: EvaluatorEntry) -> Iterator[bytes]:
    """The result lines of an evaluator's file."""
    for _, line in iter_raw_lines(run_dir.results_store / entry.file):
        yield line


def legacy_results(run_dir: RunDirectory) -> Iterator[bytes]:
    """The lines of results.jsonl of a run without a store (written before it, or by
    eval-harness); a torn last line is set aside first (results.jsonl.torn), since the
    file is about to be replaced."""
    set_aside_torn_tail(run_dir.results)
    for _, line in iter_raw_lines(run_dir.results):
        yield line


class NewResults:
    """An evaluator's new results file, written line by line, its content hash kept as it goes."""

    def __init__(self, run_dir: RunDirectory) -> None:
        run_dir.results_store.mkdir(exist_ok=True)
        self.run_dir = run_dir
        self.path = run_dir.temp_file("results", run_dir.results_store)
        self._out = self.path.open("wb", buffering=1 << 20)
        self._digest = FileDigest()
        self.count = 0

    def write(self, line: bytes) -> None:
        """Append one result line (with its newline)."""
        self._out.write(line)
        self._digest.update(line)
        self.count += 1

    def append(self, part: Path) -> None:
        """Append the lines of a part file of new results (judged into it)."""
        with part.open("rb") as source:
            while chunk := source.read(1 << 22):
                self._out.write(chunk)
                self._digest.update(chunk)
                self.count += chunk.count(b"\n")

    def finish(self, evaluator: str) -> str:
        """Close and name the file by its content; its name in results/."""
        self._out.close()
        final = self.run_dir.evaluator_results(evaluator, self._digest.hexdigest())
        os.replace(self.path, final)
        return final.name

    def discard(self) -> None:
        self._out.close()
        self.path.unlink(missing_ok=True)


def commit(run_dir: RunDirectory, entries: dict[str, EvaluatorEntry], order: Sequence[str]) -> None:
    """Make ``entries`` the store (their files are in results/ already): results.jsonl from
    their files in ``order`` (then any others), then store.json, then remove the files
    nothing names any more."""
    names = [n for n in order if n in entries] + [n for n in entries if n not in order]
    run_dir.results_store.mkdir(exist_ok=True)
    export = run_dir.temp_file("results")
    try:
        write_concatenation([run_dir.results_store / entries[n].file for n in names], export)
        set_aside_torn_tail(run_dir.results)  # another writer's torn line is kept, not replaced away
        os.replace(export, run_dir.results)
    except BaseException:
        export.unlink(missing_ok=True)
        raise
    manifest = run_dir.temp_file("results", run_dir.results_store)
    try:
        data: dict[str, Any] = {"format": FORMAT, "evaluators": {n: asdict(entries[n]) for n in names}}
        manifest.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(manifest, run_dir.results_manifest)
    except BaseException:
        manifest.unlink(missing_ok=True)
        raise
    named = {entries[n].file for n in names} | {run_dir.results_manifest.name}
    for path in run_dir.results_store.iterdir():
        if path.name not in named and path.suffix == ".jsonl" and not path.name.startswith("."):
            path.unlink(missing_ok=True)


def export_missing(run_dir: RunDirectory) -> bool:
    """Whether results.jsonl is missing while the store has results (removed by hand)."""
    return not run_dir.results.exists()
