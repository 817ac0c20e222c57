"""Random access to a run's cases snapshot without holding every case in memory."""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path

from evalh_pipeline.models import EvalCase


class CaseIndex:
    """``case_id -> EvalCase`` backed by byte offsets into ``cases.jsonl`` and a small LRU.

    Traces arrive roughly in dataset order, so a few thousand cached cases serve almost
    every lookup; the index itself costs one int per case.
    """

    def __init__(self, path: Path, cache_size: int = 4096) -> None:
        self.path = path
        self._offsets: dict[str, int] = {}
        self._cache: OrderedDict[str, EvalCase] = OrderedDict()
        self._cache_size = cache_size
        with path.open("rb") as handle:
            offset = 0
            for line in handle:
                if line.strip():
                    self._offsets[json.loads(line)["id"]] = offset
                offset += len(line)
        self._handle = path.open("rb")

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
        case = EvalCase.model_validate_json(self._handle.readline())
        self._cache[case_id] = case
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return case

    def close(self) -> None:
        self._handle.close()
