"""A run directory as the rows a database store keeps, and those rows written back as one.

Rows are keyed like the run directory keys its records: a trace by (case, variant,
sample), a result by that and the evaluator, an artifact by its cell, a text file by its
name. Each row carries a digest of its exact text, so a store sees which rows changed
without comparing payloads.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.run_dir import RunDirectory

# The run's text files a store keeps whole (small; regenerable ones included so a run read
# back from a store shows the same summary and drift without recomputing them).
RUN_FILES = ("config.yaml", "config_hash.txt", "cases.jsonl", "summary.yaml", "report.md", "drift.yaml", "drift.md")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Row:
    """One record of a run: its key (within the run), the columns a store indexes, its text."""

    key: tuple[Any, ...]
    columns: dict[str, Any]
    text: str

    @property
    def digest(self) -> str:
        return digest(self.text)


def _sample(record: dict[str, Any]) -> int:
    return int(record.get("sample") or 0)


def trace_rows(run_dir: RunDirectory) -> Iterator[Row]:
    """traces.jsonl, one row per cell (a torn tail of a killed run is not a record yet)."""
    for _, line in iter_lines(run_dir.traces):
        text = line.rstrip("\n")
        record = json.loads(text)
        key = (record["case_id"], record["variant_name"], _sample(record))
        error = record.get("error") or {}
        yield Row(key, {"started_at": record.get("started_at") or "", "error_type": error.get("type")}, text)


def result_rows(run_dir: RunDirectory) -> Iterator[Row]:
    for _, line in iter_lines(run_dir.results):
        text = line.rstrip("\n")
        record = json.loads(text)
        key = (record["case_id"], record["variant_name"], _sample(record), record["evaluator"])
        yield Row(key, {"started_at": record.get("started_at") or ""}, text)


def artifact_rows(run_dir: RunDirectory) -> Iterator[Row]:
    """Each cell's artifact.json under the run's artifacts/ folder (the record, not the files)."""
    if not run_dir.artifacts.is_dir():
        return
    for folder, _dirs, files in os.walk(run_dir.artifacts):
        if "artifact.json" not in files:
            continue
        text = Path(folder, "artifact.json").read_text(encoding="utf-8")
        record = json.loads(text)
        key = (record["case_id"], record["variant_name"], _sample(record))
        # Where the run keeps it (the workspace's key encoding), so a read-back run has it there too.
        where = Path(folder).relative_to(run_dir.path).as_posix()
        yield Row(key, {"path": where}, text)


def file_rows(run_dir: RunDirectory) -> Iterator[Row]:
    for name in RUN_FILES:
        path = run_dir.path / name
        if path.is_file():
            yield Row((name,), {}, path.read_text(encoding="utf-8"))


def summary_payload(run_dir: RunDirectory) -> Row | None:
    """summary.yaml as a JSON document (what another tool querying the store reads)."""
    if not run_dir.summary.is_file():
        return None
    from evalh_pipeline.common.yaml_files import load_yaml_text

    summary = load_yaml_text(run_dir.summary.read_text(encoding="utf-8")) or {}
    text = json.dumps(summary, sort_keys=True, default=str)
    return Row((), {"started_at": str(summary.get("started_at") or "")}, text)


def write_run_directory(
    dest: Path,
    meta: dict[str, Any],
    files: Iterable[tuple[str, str]],
    traces: Iterable[str],
    results: Iterable[str],
    artifacts: Iterable[tuple[str | None, str]],
) -> None:
    """Write a run directory into the empty folder ``dest`` from a store's rows.

    ``artifacts`` are (folder relative to the run directory, artifact.json text); a row
    without a folder (written by an older version) is skipped.
    """
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "run.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    for name, content in files:
        if name in RUN_FILES:
            (dest / name).write_text(content, encoding="utf-8")
    for name, lines in (("traces.jsonl", traces), ("results.jsonl", results)):
        with (dest / name).open("w", encoding="utf-8") as out:
            for line in lines:
                out.write(line.rstrip("\n") + "\n")
    for where, text in artifacts:
        if not where or ".." in where.split("/") or where.startswith("/"):
            continue
        folder = dest / where
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "artifact.json").write_text(text, encoding="utf-8")
