"""Random access to a run's cases snapshot without holding every case in memory."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from evalh_pipeline.models import EvalCase
from evalh_pipeline.store.jsonl import iter_raw_lines
from evalh_pipeline.store.records import CASES


class CaseIndex:
    """``case_id -> EvalCase`` backed by byte offsets into ``cases.jsonl`` and a small LRU.

    Traces arrive roughly in dataset order, so a few thousand cached cases serve almost
    every lookup; the index itself costs one int per case.
    """

    def __init__(self, path: Path, cache_size: int = 4096) -> None:
        self.path = path
        self._cache_size = cache_size
        # Scanned at the first lookup: judging evaluators that never read the case needs none.
        self._scanned: dict[str, int] | None = None
        self._cache: OrderedDict[str, EvalCase] = OrderedDict()
        self._handle = path.open("rb")

    @property
    def _offsets(self) -> dict[str, int]:
        if self._scanned is None:
            self._scanned = _scan(self.path)
        return self._scanned

    def __len__(self) -> int:
        return len(self._offsets)

    def __contains__(self, case_id: str) -> bool:
        return case_id in self._offsets

    def get(self, case_id: str) -> EvalCase:
        case = self._cache.get(case_id)
        if case is not None:
            self._cache.move_to_end(case_id)
            return case
        self._handle.seek(self._offsets[case_id])
        # pydantic-core's parser + validate_python: about twice as fast as validate_json here.
        case = EvalCase.model_validate(from_json(self._handle.readline()))
        self._cache[case_id] = case
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return case

    def close(self) -> None:
        self._handle.close()


def _scan(path: Path) -> dict[str, int]:
    offsets: dict[str, int] = {}
    with path.open("rb", buffering=1 << 20) as handle:
        offset = 0
        for line in handle:
            if line.strip():
                (case_id,) = CASES.read_fields(line, "id")
                offsets[case_id] = offset
            offset += len(line)
    return offsets


def case_evaluator_entries(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(case id, evaluator entry) of every case's own evaluators in a cases snapshot, in file
    order (none when the snapshot is missing)."""
    if not path.exists():
        return
    for _, line in iter_raw_lines(path):
        if b'"evaluators"' not in line:
            continue  # most cases have none: not parsed
        row = from_json(line)
        for entry in row.get("evaluators") or ():
            yield str(row["id"]), entry


def case_evaluator_names(path: Path) -> list[str]:
    """The names of the cases' own evaluators in a cases snapshot, in order of first appearance."""
    return list(dict.fromkeys(str(entry["name"]) for _, entry in case_evaluator_entries(path)))
