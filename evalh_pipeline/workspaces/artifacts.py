"""artifact.json: writing it (exact for any file name) and loading it back for re-evaluation.

Persisted with ``json.dumps(ensure_ascii=True)`` rather than pydantic's JSON, so file
names that are not UTF-8 survive as ``\\udcXX`` escapes instead of being replaced.
With the default local storage, the persisted ``artifacts_path`` is relative to the run
directory (``artifacts/<case>/<variant>``) so a moved run folder stays valid; it is
resolved to an absolute path when loaded. Other storages persist the full URL.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.models import FilesystemArtifact

if TYPE_CHECKING:
    # fsspec (under object_storage) costs ~50 ms to import: only evals with a workspace load it.
    from evalh_pipeline.store.object_storage import FsspecObjectStorage

ARTIFACT_FILE = "artifact.json"


def dump_artifact(artifact: FilesystemArtifact, persisted_path: str) -> bytes:
    """artifact.json bytes with ``artifacts_path`` replaced by ``persisted_path``."""
    data = artifact.model_dump(mode="python")
    data["artifacts_path"] = persisted_path
    # Compact: with indent, json falls back to its pure-Python encoder (10x slower on big manifests).
    return (json.dumps(data, ensure_ascii=True, separators=(",", ":"), default=str) + "\n").encode("ascii")


def parse_artifact(raw: bytes, base: str | None = None) -> FilesystemArtifact:
    """Parse artifact.json; a relative ``artifacts_path`` is resolved against ``base``."""
    return artifact_from_document(json.loads(raw), base)


def artifact_from_document(data: dict[str, Any], base: str | None = None) -> FilesystemArtifact:
    """An artifact.json document as a FilesystemArtifact (``artifacts_path`` resolved against ``base``)."""
    path = data.get("artifacts_path", "")
    if base is not None and path and "://" not in path and not posixpath.isabs(path) and not Path(path).is_absolute():
        data["artifacts_path"] = str(Path(base) / path)
    return FilesystemArtifact.model_validate(data)


def load_artifact(
    spec: EvalSpec, run_dir: Any, case_id: str, variant_name: str, sample: int = 0
) -> FilesystemArtifact | None:
    """The persisted artifact of one cell, or None (no workspace, or the cell has none)."""
    return ArtifactLoader(spec, run_dir).get(case_id, variant_name, sample)


class ArtifactLoader:
    """Loads persisted artifacts of one run for re-evaluation; picklable for judging workers.

    Holds the storage settings rather than an open storage, so a worker process opens its
    own. Without a workspace in the eval every lookup is None at no cost.
    """

    def __init__(self, spec: EvalSpec, run_dir: Any) -> None:
        workspace = spec.config.workspace
        self.enabled = workspace is not None
        self.object_storage = (workspace.model_extra or {}).get("object_storage") if workspace is not None else None
        self.run_dir = Path(getattr(run_dir, "path", run_dir)).resolve()  # a RunDirectory or a path
        self._storage: FsspecObjectStorage | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_storage": None}

    def get(self, case_id: str, variant_name: str, sample: int = 0) -> FilesystemArtifact | None:
        """The artifact of one cell, or None when the eval has no workspace or the cell has none."""
        if not self.enabled:
            return None
        from evalh_pipeline.store.object_storage import read_artifact_document, storage_for

        if self._storage is None:
            self._storage = storage_for(self.object_storage, self.run_dir / "artifacts", self.run_dir.name)
        document = read_artifact_document(self._storage, case_id, variant_name, sample, ARTIFACT_FILE)
        if document is None:
            return None
        return artifact_from_document(document, base=str(self.run_dir) if self._storage.local else None)
