"""Judge verdict cache: one JSON file per (backend, model, prompt, schema), across runs.

Files live under ``<runs root>/.cache/judge/<2 hex>/<sha256>.json``. Each is written to a
temp file and renamed, so concurrent judges never read half a file; two writers of the
same key write the same reply, so the last rename winning is harmless.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evalh_pipeline.llm.chat import JudgeReply
from evalh_pipeline.store.run_dir import write_atomic

CACHE_VERSION = 1


def cache_key(backend: str, model: str, system: str, user: str, json_schema: dict[str, Any]) -> str:
    """sha256 of everything that decides the judge's reply."""
    body = json.dumps([CACHE_VERSION, backend, model, system, user, json_schema], sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


class VerdictCache:
    """Validated judge replies by key; a corrupt or unreadable entry is a miss."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    async def get(self, key: str) -> JudgeReply | None:
        return await asyncio.to_thread(self._read, key)

    async def put(self, key: str, reply: JudgeReply) -> None:
        await asyncio.to_thread(write_atomic, self._path(key), json.dumps(asdict(reply), ensure_ascii=False))

    def _read(self, key: str) -> JudgeReply | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            return JudgeReply(**data)
        except (OSError, ValueError, TypeError):
            return None
