"""JSON Lines files: append one record per line, read them back with migration.

Recovery rule: a record is durable once its line ends with a newline. A final line
without one is the torn write of a killed process (or of a full disk); readers skip it.
The next appender moves it aside before writing, never destroying it: the torn bytes are
appended to ``<file>.torn`` beside the file (made durable first), then cut from the file,
and a warning says so once. Appenders buffer (:class:`JsonlAppender`): a killed process
loses the lines it had not flushed yet, and at most tears the last one it was writing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from pydantic import BaseModel
from pydantic_core import from_json

from evalh_pipeline.errors import UserError
from evalh_pipeline.models.versioning import SCHEMA_VERSION, migrate

M = TypeVar("M", bound=BaseModel)

logger = logging.getLogger(__name__)

try:  # the `fast` extra: several times sha256's speed, for hashing whole run files
    import blake3 as _blake3
except ImportError:  # pragma: no cover - exercised only without the extra
    _blake3 = None  # type: ignore[assignment]


class FileDigest:
    """A content hash of a run file's bytes, fed in blocks: blake3 where installed (the
    ``fast`` extra), else sha256. Its hex digest names the algorithm, so a digest made with
    one is never taken for one made with the other (they simply differ)."""

    def __init__(self) -> None:
        self._hash = _blake3.blake3() if _blake3 is not None else hashlib.sha256()
        self._prefix = "b3-" if _blake3 is not None else "s2-"

    def update(self, data: bytes | memoryview) -> None:
        self._hash.update(data)

    def hexdigest(self) -> str:
        return self._prefix + self._hash.hexdigest()


# Bytes an appender buffers before handing them to the kernel in one write.
BUFFER_BYTES = 1 << 16


class CorruptRecordError(UserError, ValueError):
    """A complete line of a JSONL file is not a valid record."""


class JsonlAppender:
    """Appends lines to a JSONL file through one buffer; optionally keeps the digest of the
    file's complete lines as it goes, so nobody reads the file again to hash it.

    Durability: lines reach the kernel when the buffer holds :data:`BUFFER_BYTES`, at
    :meth:`flush` and at :meth:`close`, which also fsyncs (a clean stop: the end of a stage,
    Ctrl-C, any exception that ends it). A process killed with ``kill -9`` loses at most the
    lines not flushed yet; a write cut short (a full disk) leaves a torn tail, which the
    next appender sets aside (:func:`set_aside_torn_tail`). A failed write is raised by
    that call and by every later one, and the digest is no longer known.
    """

    def __init__(self, path: Path, seal: Callable[[bytes], tuple[bytes, str]] | None = None, *,
                 keep_digest: bool = False, buffer_bytes: int = BUFFER_BYTES) -> None:
        """``seal``: makes each line's bytes (with its newline) and its content hash (the
        traces codec's, store/records.py ``traces_appender``). ``keep_digest``: keep
        :attr:`digest` (the lines already in the file are hashed once, here) and
        :attr:`lines_found`."""
        self.path = path
        self._seal = seal
        self._limit = buffer_bytes
        self._pending: list[bytes] = []
        self._size = 0
        self._failed: BaseException | None = None
        set_aside_torn_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._digest: FileDigest | None = None
        #: With ``keep_digest``, the lines the file held when this appender opened it (blank
        #: ones counted, as line numbers count them): every later line is one it wrote.
        self.lines_found: int | None = None
        if keep_digest:
            self._digest = FileDigest()
            self.lines_found = 0
            # What an earlier pass left (a resume, reused traces): complete lines only, its
            # torn tail set aside just above.
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 22):
                    self._digest.update(chunk)
                    self.lines_found += chunk.count(b"\n")

    @property
    def digest(self) -> str:
        """The digest of the file's complete lines once the lines written are flushed (what
        :func:`complete_lines_digest` of the file gives); "" when not kept or not known."""
        return self._digest.hexdigest() if self._digest is not None and self._failed is None else ""

    def write(self, line: str | bytes) -> str | None:
        """Append ``line`` (text, or its UTF-8 bytes); its content hash when the appender seals lines."""
        if self._failed is not None:
            raise OSError(f"{self.path}: an earlier write failed ({self._failed})")
        digest = None
        raw = line.encode("utf-8") if isinstance(line, str) else line
        if self._seal is not None:
            data, digest = self._seal(raw)
        else:
            data = raw + b"\n"
        self._pending.append(data)
        self._size += len(data)
        if self._size >= self._limit:
            self.flush()
        return digest

    def flush(self) -> None:
        """Hand the buffered lines to the kernel (one ``write`` for all of them)."""
        if self._failed is not None:
            raise OSError(f"{self.path}: an earlier write failed ({self._failed})")
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        self._size = 0
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except BaseException as exc:
            self._failed = exc  # the file may end in a torn line now: its digest is not known
            raise
        if self._digest is not None:
            self._digest.update(data)

    def close(self) -> None:
        """Flush, fsync and close: every line written is durable. Closing again does nothing."""
        if self._fd < 0:
            return
        try:
            self.flush()
            os.fsync(self._fd)
        finally:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "JsonlAppender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def torn_path(path: Path) -> Path:
    """Where the torn tails of ``path`` are kept: ``<name>.torn`` beside it."""
    return path.with_name(path.name + ".torn")


def set_aside_torn_tail(path: Path) -> Path | None:
    """Move a final line that has no newline (the partial write of a killed process) to
    ``<name>.torn`` beside the file and cut it from the file; where it went (None: there
    was none). The torn bytes reach the ``.torn`` file (flushed to disk) before the file is
    cut, so a crash in between leaves them in both places, never in neither."""
    if not path.exists():
        return None
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return None
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return None
        cut = _last_line_start(handle, size)
        handle.seek(cut)
        torn = handle.read(size - cut)
        aside = torn_path(path)
        with aside.open("ab") as kept:
            kept.write(torn + b"\n")
            kept.flush()
            os.fsync(kept.fileno())
        handle.truncate(cut)
    logger.warning("%s: its last line was torn (%d bytes, the write of a process that was killed or ran out "
                   "of disk); it was moved to %s", path, len(torn), aside)
    return aside


def _last_line_start(handle: BinaryIO, size: int) -> int:
    """The offset just after the last newline of a file of ``size`` bytes (0: none)."""
    block = 1 << 16
    position = size
    while position > 0:
        start = max(0, position - block)
        handle.seek(start)
        chunk = handle.read(position - start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        position = start
    return 0


def complete_lines_digest(path: Path) -> str:
    """The content hash (:class:`FileDigest`) of a JSONL file's complete lines (a torn tail left out: readers skip it),
    read in blocks; "" for a missing file. What a store of things derived from the file
    records to know the file still says the same, whatever its inode, size or mtime."""
    if not path.exists():
        return ""
    digest = FileDigest()
    pending = b""
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                pending += chunk
                continue
            if pending:
                digest.update(pending)
            digest.update(memoryview(chunk)[:cut])
            pending = chunk[cut:]
    return digest.hexdigest()


def write_concatenation(sources: Iterable[Path], target: Path) -> None:
    """``target`` := the bytes of ``sources`` one after another (copied in the kernel where
    it can). The caller renames ``target`` into place."""
    with target.open("wb") as out:
        for source in sources:
            with source.open("rb") as src:
                remaining = os.fstat(src.fileno()).st_size
                out.flush()  # what went through the buffer first
                try:
                    while remaining > 0:
                        sent = os.sendfile(out.fileno(), src.fileno(), None, remaining)
                        if sent == 0:
                            break
                        remaining -= sent
                except (AttributeError, OSError):
                    src.seek(os.fstat(src.fileno()).st_size - remaining)
                    while chunk := src.read(1 << 22):
                        out.write(chunk)


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Complete lines of the file with their 1-based numbers; a torn tail is skipped."""
    for number, raw in iter_raw_lines(path):
        yield number, raw.decode("utf-8")


def count_lines(path: Path) -> int:
    """How many lines :func:`iter_raw_lines` yields (complete, non-blank), counted in blocks
    without a Python step per line read (a summary counts the cases of a 100,000-case run)."""
    if not path.exists():
        return 0
    count = 0
    pending = b""
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 23):
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                pending += chunk
                continue
            block = pending + chunk[:cut]
            pending = chunk[cut:]
            lines = sum(1 for line in block.split(b"\n")[:-1] if line.strip())
            count += lines
    return count


def iter_raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Like :func:`iter_lines`, undecoded: callers that parse JSON need no ``str`` copy."""
    if not path.exists():
        return
    # Bytes first: a torn tail may end inside a multi-byte character.
    with path.open("rb", buffering=1 << 20) as handle:
        number = 1
        for raw in handle:
            if not raw.endswith(b"\n"):
                return
            if raw.strip():
                yield number, raw
            number += 1


def iter_records(path: Path, model: type[M], kind: str) -> Iterator[M]:
    """Validated records of ``model``; older 1.x records are migrated, other majors refused."""
    for number, line in iter_raw_lines(path):
        yield parse_record(line, model, kind, path, number)


def parse_record(line: bytes | str, model: type[M], kind: str, path: Path, number: int) -> M:
    """Line ``number`` of ``path`` as ``model``, migrated from an older 1.x shape if need be."""
    try:
        # pydantic-core's parser beats json.loads, and the dict is what migration needs (a
        # line of the current schema is validated from its JSON by the codec: records.py).
        raw = from_json(line)
    except ValueError:
        try:  # what the stricter parser refuses but json accepts (e.g. a lone surrogate escape)
            raw = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CorruptRecordError(f"{path}:{number}: not JSON ({exc})") from None
    if isinstance(raw, dict) and raw.get("schema_version") != SCHEMA_VERSION:
        raw = migrate(kind, raw, what=f"{path.name}:{number}")
    return model.model_validate(raw)
