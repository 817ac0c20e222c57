"""JSON Lines files: append one record per line, read them back with migration.

Recovery rule: a record is durable once its line ends with a newline. A final line
without one is the torn write of a killed process; readers skip it and the next
appender truncates it away before writing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from evalh_pipeline.models.versioning import SCHEMA_VERSION, migrate

M = TypeVar("M", bound=BaseModel)


class CorruptRecordError(ValueError):
    """A complete line of a JSONL file is not a valid record."""


class JsonlAppender:
    """Appends lines with one ``write`` each, so a killed process loses at most a torn tail."""

    def __init__(self, path: Path) -> None:
        self.path = path
        truncate_torn_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, line: str) -> None:
        data = (line + "\n").encode("utf-8")
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> "JsonlAppender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def truncate_torn_tail(path: Path) -> None:
    """Drop a final line that has no newline (the partial write of a killed process)."""
    if not path.exists():
        return
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        block = 1 << 16
        position = size
        while position > 0:
            start = max(0, position - block)
            handle.seek(start)
            chunk = handle.read(position - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                handle.truncate(start + newline + 1)
                return
            position = start
        handle.truncate(0)


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Complete lines of the file with their 1-based numbers; a torn tail is skipped."""
    if not path.exists():
        return
    # Bytes first: a torn tail may end inside a multi-byte character.
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                return
            if raw.strip():
                yield number, raw.decode("utf-8")


def iter_records(path: Path, model: type[M], kind: str) -> Iterator[M]:
    """Validated records of ``model``; older 1.x records are migrated, other majors refused."""
    for number, line in iter_lines(path):
        what = f"{path.name}:{number}"
        try:
            record = model.model_validate_json(line)  # fast path: the current shape
        except ValueError:
            record = None
        version = getattr(record, "schema_version", None)
        if record is not None and version == SCHEMA_VERSION:
            yield record
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorruptRecordError(f"{path}:{number}: not JSON ({exc.msg})") from None
        yield model.model_validate(migrate(kind, raw, what=what))
