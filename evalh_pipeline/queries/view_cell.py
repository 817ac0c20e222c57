"""The records of one case of a run, for the viewer's cell pages (`evalh view`).

DuckDB scans traces.jsonl and results.jsonl once each for the lines of one case id (a
parameter, never part of a path or of the SQL text); only those lines are parsed in Python.
The records are returned as plain dicts, as written: a run folder is untrusted input (an
eval-harness run, a hand edit), so nothing here insists on the models' shape, and whatever
a page shows of them is escaped by the templates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh_pipeline.queries.sql import MAX_RECORD_BYTES, connect
from evalh_pipeline.store.run_dir import RunDirectory

# One JSON object per line; a line that is not one (a torn tail) never matches.
_LINES_SQL = """
SELECT json FROM read_ndjson_objects('{path}', ignore_errors=true, maximum_object_size={size})
WHERE {prefilter} json_extract_string(json, '$.{key}') = $value
"""
# Extracting a key parses every line; a substring test does not, so it goes first and halves
# a cell page on a large run. It is only a prefilter, and only for a value that JSON writers
# in use spell the same way between quotes (no escapes: quotes, backslashes, "/", which some
# writers escape, control and non-ASCII characters); the key test decides.
_PLAIN = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\", "/"}


@dataclass
class CaseRecords:
    """One case of one run: its dataset row (when the run kept cases.jsonl), traces and results."""

    case_id: str
    case: dict[str, Any] | None = None
    traces: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)

    def cells(self) -> list[tuple[str, int]]:
        """The (variant, sample) cells the case has, in file order."""
        seen: dict[tuple[str, int], None] = {}
        for trace in self.traces:
            seen[(str(trace.get("variant_name")), _sample(trace))] = None
        return list(seen)

    def trace(self, variant: str, sample: int = 0) -> dict[str, Any] | None:
        for trace in self.traces:
            if trace.get("variant_name") == variant and _sample(trace) == sample:
                return trace
        return None

    def results_of(self, variant: str, sample: int = 0) -> list[dict[str, Any]]:
        return [r for r in self.results if r.get("variant_name") == variant and _sample(r) == sample]


def _sample(record: dict[str, Any]) -> int:
    value = record.get("sample") or 0
    return value if isinstance(value, int) else 0


def _matching(con: Any, path: Path, key: str, value: str) -> list[dict[str, Any]]:
    if not path.exists() or path.stat().st_size == 0:
        return []
    literal = str(path).replace("'", "''")
    params = {"value": value}
    prefilter = ""
    if value and set(value) <= _PLAIN:
        prefilter, params["needle"] = "contains(json, $needle) AND", f'"{value}"'
    sql = _LINES_SQL.format(path=literal, size=MAX_RECORD_BYTES, key=key, prefilter=prefilter)
    rows = con.execute(sql, params).fetchall()
    found = []
    for (text,) in rows:
        record = json.loads(text)
        if isinstance(record, dict):
            found.append(record)
    return found


def read_case(run_dir: RunDirectory, case_id: str) -> CaseRecords:
    """Every record of ``case_id`` in the run (empty when the run has no such case)."""
    con = connect()
    try:
        cases = _matching(con, run_dir.cases, "id", case_id)
        return CaseRecords(
            case_id=case_id,
            case=cases[0] if cases else None,
            traces=_matching(con, run_dir.traces, "case_id", case_id),
            results=_matching(con, run_dir.results, "case_id", case_id),
        )
    finally:
        con.close()


def read_artifact(run_dir: RunDirectory, case_id: str, variant: str, sample: int = 0) -> dict[str, Any] | None:
    """The cell's artifact.json (its workspace diff) when the run had a workspace, else None."""
    from evalh_pipeline.common.yaml_files import load_yaml_text

    if not run_dir.config_yaml.exists():
        return None
    config = load_yaml_text(run_dir.config_yaml.read_text(encoding="utf-8")) or {}
    workspace = config.get("workspace") if isinstance(config, dict) else None
    if not isinstance(workspace, dict):
        return None
    from evalh_pipeline.store.object_storage import read_artifact_document, storage_for

    storage = storage_for(workspace.get("object_storage"), run_dir.artifacts, run_dir.run_id)
    return read_artifact_document(storage, case_id, variant, sample)
