"""``local_files``: the run directory itself (``runs/<run_id>/``); it ignores the namespace.

The engine writes runs there directly, and further ``local_files`` entries (folders or
URLs) are file mirrors copied by :mod:`evalh_pipeline.outputs.publishing`. This class only
validates the entry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict

from evalh_pipeline.outputs.stores.base import StoreConfig, TraceStore

if TYPE_CHECKING:
    from evalh_pipeline.store.run_dir import RunDirectory


class LocalFilesConfig(StoreConfig):
    # Other keys are accepted and ignored, as they always were here and in eval-harness.
    model_config = ConfigDict(extra="allow")

    path: str = "runs"


class LocalFilesStore(TraceStore[LocalFilesConfig]):
    """Validation only: the run directory is the engine's own working surface."""

    mirrors = False

    def write_run(self, run_dir: RunDirectory, stage: str) -> None:  # never called for local files
        return None
