"""What each rate limit did during a run: the lines of its ``rate_limits.jsonl``."""

from __future__ import annotations

import json
from typing import Any

from evalh_pipeline.store.run_dir import RunDirectory


def rate_limit_records(run_dir: RunDirectory) -> list[dict[str, Any]]:
    """One record per limit a stage met, in the order written (none: an empty list). A line
    that is not a JSON object (a torn last line) is skipped."""
    try:
        text = run_dir.rate_limits.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return []
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records
