"""An advisory lock on a run directory, held while its shared files are rewritten."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the block, waiting as long as it takes."""
    with FileLock(path):
        yield
