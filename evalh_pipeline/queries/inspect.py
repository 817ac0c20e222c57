"""Select cells of a run for ``evalh inspect`` and read their trace and results.

DuckDB picks the (case, variant, sample) keys (with the shared cell verdict, so ``failed``
means exactly what the summary counts as not passed, or errored); then traces.jsonl and
results.jsonl are streamed once each and only the selected records are kept. A cell
that ran in a workspace also gets its artifact (the filesystem diff) from artifact.json.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from evalh_pipeline.queries.sql import connect
from evalh_pipeline.queries.cells import load_cells, run_pass_criteria
from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.run_dir import RunDirectory

SELECT_CELLS_SQL = """
SELECT case_id, variant_name, sample, coalesce(passed, false) AS passed, error_type
FROM cells
WHERE ($case_id IS NULL OR case_id = $case_id)
  AND ($variant IS NULL OR variant_name = $variant)
  AND (NOT $failed OR NOT coalesce(passed, false) OR error_type IS NOT NULL)
ORDER BY case_id, variant_name, sample
"""

Key = tuple[str, str, int]


class InspectedCell(BaseModel):
    """One cell as ``evalh inspect`` shows it: its verdict, trace record and evaluator results."""

    case_id: str
    variant_name: str
    sample: int = 0
    passed: bool
    trace: dict[str, Any] = Field(default_factory=dict)
    results: list[dict[str, Any]] = Field(default_factory=list)
    artifact: dict[str, Any] | None = None  # the persisted artifact.json, when the eval has a workspace


class Inspection(BaseModel):
    run_id: str
    matched: int
    cells: list[InspectedCell]


def _key(record: dict[str, Any]) -> tuple[Any, Any, int]:  # a raw record's values, as found
    return record.get("case_id"), record.get("variant_name"), record.get("sample") or 0


def inspect_run(
    run_dir: RunDirectory,
    *,
    case_id: str | None = None,
    variant: str | None = None,
    failed: bool = False,
    limit: int | None = None,
) -> Inspection:
    """The cells matching the filters (the first ``limit`` of them, by case, variant, sample)."""
    con = connect()
    try:
        load_cells(con, run_dir, run_pass_criteria(run_dir))
        rows = con.execute(SELECT_CELLS_SQL, {"case_id": case_id, "variant": variant, "failed": failed}).fetchall()
    finally:
        con.close()
    matched = len(rows)
    if limit is not None:
        rows = rows[:limit]
    cells = {(c, v, s or 0): InspectedCell(case_id=c, variant_name=v, sample=s or 0, passed=p) for c, v, s, p, _ in rows}
    if cells:
        for _, line in iter_lines(run_dir.traces):
            record = json.loads(line)
            cell = cells.get(_key(record))
            if cell is not None:
                cell.trace = record
        for _, line in iter_lines(run_dir.results):
            record = json.loads(line)
            cell = cells.get(_key(record))
            if cell is not None:
                cell.results.append(record)
        read_artifact = _artifact_reader(run_dir)
        if read_artifact is not None:
            for key, cell in cells.items():
                cell.artifact = read_artifact(key)
    return Inspection(run_id=run_dir.run_id, matched=matched, cells=list(cells.values()))


def _artifact_reader(run_dir: RunDirectory) -> Callable[[Key], dict[str, Any] | None] | None:
    """Reads a cell's artifact.json from where the run put it; None when the run had no workspace."""
    from evalh_pipeline.common.yaml_files import load_yaml_text

    config = load_yaml_text(run_dir.config_yaml.read_text(encoding="utf-8")) if run_dir.config_yaml.exists() else {}
    workspace = (config or {}).get("workspace")
    if not isinstance(workspace, dict):
        return None
    # Only here: fsspec is not needed by runs without a workspace.
    from evalh_pipeline.store.object_storage import read_artifact_document, storage_for

    storage = storage_for(workspace.get("object_storage"), run_dir.artifacts, run_dir.run_id)

    def read(key: Key) -> dict[str, Any] | None:
        return read_artifact_document(storage, *key)

    return read
