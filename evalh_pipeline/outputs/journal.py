"""The failure journal of ``output[]``: the run's ``publish.jsonl``.

A mirror folder or URL, a trace store or a sink that did not take a stage is appended
here (one JSON line: ``at``, ``stage``, ``target``, ``ok: false``, ``error``) and the stage
goes on; ``evalh`` warns about the lines of its command after it (cli/running.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from evalh_pipeline.store.jsonl import JsonlAppender
from evalh_pipeline.store.run_dir import RunDirectory


@dataclass(frozen=True)
class OutputFailure:
    """An output that did not take a stage: its label (never a credential) and the error."""

    target: str
    error: str


def record_failure(run_dir: RunDirectory, stage: str, failure: OutputFailure) -> None:
    """Append an output's failure to the run's publish.jsonl."""
    record = {
        "at": datetime.now(timezone.utc).isoformat(),
        "stage": stage,
        "target": failure.target,
        "ok": False,
        "error": failure.error,
    }
    with JsonlAppender(run_dir.publish_log) as log:
        log.write(json.dumps(record, sort_keys=True))


def recorded_failures(run_dir: RunDirectory, since: datetime | None = None) -> list[dict[str, Any]]:
    """The failures in ``publish.jsonl`` (those at or after ``since``, when given)."""
    log = run_dir.publish_log
    if not log.exists():
        return []
    records = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn tail of a killed process
        if since is None or datetime.fromisoformat(record["at"]) >= since:
            records.append(record)
    return records
