"""ObjectStorage: where artifacts live, over fsspec (file://, memory://, s3://, gs://, az://...).

Keys are ``/``-separated and relative to the storage root. A cell's artifacts sit under
:func:`artifact_key`; its ``artifact.json`` at ``<case>/<variant>/artifact.json``
(``<case>/<variant>~<n>/`` for sample n > 0). Key parts are percent-encoded: only
``A-Z a-z 0-9 _ . -`` stay as they are (``.``/``..`` alone are encoded too), every other
byte of the UTF-8 name becomes ``%XX`` (a lone surrogate is encoded as its three
UTF-8-style bytes, which no other text produces), and the empty name is ``%`` alone
(every other encoding has ``%`` followed by two hex digits). So two different names
never share a folder, and ``~`` is never part of an encoded name: the sample suffix is
unambiguous. Parts longer than 150 characters are cut and suffixed with ``~`` and 16
hex digits of the sha256 of the whole name so they fit any file system.

Runs made before this encoding stored the empty case id at ``%00`` (shared with
``"\x00"``); :func:`legacy_key_part` is what readers fall back to for them.

Cloud protocols need their fsspec backend: the ``s3``, ``gcs`` and ``azure`` extras.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from evalh_pipeline.common.trees import remove_tree, tree_bytes
from evalh_pipeline.models.versioning import migrate
from evalh_pipeline.common.copying import copy_tree

_SAFE = re.compile(r"[A-Za-z0-9_.-]")
_MAX_PART = 150


def encode_key_part(name: str) -> str:
    """A file-name- and URL-safe, injective encoding of one key part (see the module doc)."""
    if name == "":
        return "%"
    # surrogatepass, not surrogateescape: "\udcc3\udca9" must not encode like "é".
    raw = name.encode("utf-8", "surrogatepass")
    if name in (".", ".."):
        return "".join(f"%{b:02X}" for b in raw)
    encoded = "".join(chr(b) if _SAFE.fullmatch(chr(b)) else f"%{b:02X}" for b in raw)
    if len(encoded) > _MAX_PART:
        encoded = encoded[:_MAX_PART] + "~" + hashlib.sha256(raw).hexdigest()[:16]
    return encoded


def legacy_key_part(name: str) -> str | None:
    """The folder name runs made before the injective encoding used, where it differs."""
    return "%00" if name == "" else None


def artifact_key(case_id: str, variant_name: str, sample: int = 0) -> str:
    """The folder key of one cell's artifacts (relative to the storage root)."""
    variant = encode_key_part(variant_name) + (f"~{sample}" if sample else "")
    return f"{encode_key_part(case_id)}/{variant}"


def legacy_artifact_key(case_id: str, variant_name: str, sample: int = 0) -> str | None:
    """:func:`artifact_key` as runs made before the injective encoding wrote it, if different."""
    case, variant = legacy_key_part(case_id), legacy_key_part(variant_name)
    if case is None and variant is None:
        return None
    variant = (variant or encode_key_part(variant_name)) + (f"~{sample}" if sample else "")
    return f"{case or encode_key_part(case_id)}/{variant}"


def read_artifact_document(storage: "ObjectStorage", case_id: str, variant_name: str, sample: int = 0,
                           file: str = "artifact.json") -> dict[str, Any] | None:
    """The parsed ``artifact.json`` of one cell, or None when the cell has none.

    Tries the current key, then the legacy one, and keeps a document only if it names
    this very cell: a folder can never hand one cell's files to another. Its
    ``schema_version`` is checked as a trace's is: another major raises
    :class:`~evalh_pipeline.models.versioning.SchemaVersionError`.
    """
    import json

    for key in (artifact_key(case_id, variant_name, sample), legacy_artifact_key(case_id, variant_name, sample)):
        if key is None:
            continue
        try:
            document = json.loads(storage.get(f"{key}/{file}"))
        except (FileNotFoundError, KeyError):
            continue
        if (isinstance(document, dict) and document.get("case_id") == case_id
                and document.get("variant_name") == variant_name and int(document.get("sample") or 0) == sample):
            # Another major is refused, an older 1.x shape upgraded, as traces are on read.
            return migrate("artifact", document, what=storage.url(f"{key}/{file}"))
    return None


@dataclass
class Transfer:
    """How a folder was published: renamed into place (``moved``) or copied (``copied_bytes``)."""

    moved: bool = False
    copied_bytes: int = 0


class ObjectStorage(ABC):
    """Put/get bytes and whole folders by key; ``url`` says where a key lives for readers."""

    @abstractmethod
    def put(self, key: str, data: bytes) -> None:
        ...

    @abstractmethod
    def get(self, key: str) -> bytes:
        ...

    @abstractmethod
    def exists(self, key: str) -> bool:
        ...

    @abstractmethod
    def url(self, key: str) -> str:
        ...

    @abstractmethod
    def publish_folder(self, local: Path, key: str, *, move: bool) -> Transfer:
        ...

    @abstractmethod
    def delete(self, key: str) -> None:
        ...


class FsspecObjectStorage(ObjectStorage):
    """ObjectStorage on any fsspec file system, rooted at ``root_url``.

    On the local file system ``url`` returns a plain absolute path and folders are
    published by rename when ``move`` is allowed and the source is on the same device.
    """

    def __init__(self, root_url: str) -> None:
        self.root_url = root_url
        self.fs, root = fsspec.core.url_to_fs(root_url)
        self.local = isinstance(self.fs, LocalFileSystem)
        self.root = os.path.abspath(root) if self.local else root.rstrip("/")

    def _path(self, key: str) -> str:
        if key.startswith("/") or any(part in ("", ".", "..") for part in key.split("/")):
            raise ValueError(f"storage key {key!r} is not a plain relative key")
        return f"{self.root}/{key}" if key else self.root

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        if self.local:
            _write_bytes_atomic(Path(path), data)
            return
        self.fs.pipe_file(path, data)

    def get(self, key: str) -> bytes:
        data: bytes = self.fs.cat_file(self._path(key))
        return data

    def exists(self, key: str) -> bool:
        return bool(self.fs.exists(self._path(key)))

    def url(self, key: str) -> str:
        path = self._path(key)
        return path if self.local else self.fs.unstrip_protocol(path)

    def delete(self, key: str) -> None:
        path = self._path(key)
        if self.local:
            remove_tree(Path(path))
        elif self.fs.exists(path):
            self.fs.rm(path, recursive=True)

    def publish_folder(self, local: Path, key: str, *, move: bool) -> Transfer:
        """Make the local folder ``local`` the content of ``key`` (replacing what was there)."""
        destination = self._path(key)
        self.delete(key)
        if self.local:
            return _publish_local(local, Path(destination), move)
        transfer = Transfer()
        # Symlinks cannot be stored in object stores: the manifest records them instead.
        for folder, _dirs, files in os.walk(local):
            relative = os.path.relpath(folder, local)
            for name in files:
                source = os.path.join(folder, name)
                st = os.lstat(source)
                if not stat.S_ISREG(st.st_mode):
                    continue
                parts = [] if relative == "." else relative.split(os.sep)
                target_key = "/".join(encode_path_part(p) for p in [*parts, name])
                self.fs.put_file(source, f"{destination}/{target_key}")
                transfer.copied_bytes += st.st_size
        return transfer


def encode_path_part(name: str) -> str:
    """A file name as an object-store key part: non-UTF-8 bytes percent-encoded, the rest kept."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace").replace("\\x", "%")


def _write_bytes_atomic(path: Path, data: bytes) -> None:
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _publish_local(local: Path, destination: Path, move: bool) -> Transfer:
    destination.parent.mkdir(parents=True, exist_ok=True)
    if move:
        try:
            os.rename(local, destination)
            # Not sized: walking a moved tree again costs time and callers know its size.
            return Transfer(moved=True)
        except OSError as exc:
            # Another device, or a folder the system made read-only: copy instead.
            if exc.errno not in (errno.EXDEV, errno.EACCES, errno.EPERM, errno.ENOTEMPTY, errno.EEXIST):
                raise
    copy_tree(local, destination)
    return Transfer(copied_bytes=tree_bytes(destination))


def storage_for(object_storage: str | None, run_artifacts_dir: Path, run_id: str) -> FsspecObjectStorage:
    """The artifacts storage of one run: ``<run dir>/artifacts`` by default, else ``<url>/<run id>``."""
    if object_storage:
        return FsspecObjectStorage(f"{object_storage.rstrip('/')}/{run_id}")
    return FsspecObjectStorage(str(run_artifacts_dir))
