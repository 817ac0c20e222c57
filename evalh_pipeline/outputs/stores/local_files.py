"""``local_files``: the run directory itself (``runs/<run_id>/``); it ignores the namespace.

The engine writes runs there directly, and further ``local_files`` entries (folders or
URLs) are file mirrors copied by :mod:`evalh_pipeline.outputs.publishing`. This class only
validates the entry.
"""

from __future__ import annotations

from pydantic import ConfigDict

from evalh_pipeline.outputs.stores.base import StoreConfig, TraceStore


class LocalFilesConfig(StoreConfig):
    # Other keys are accepted and ignored, as they always were here and in eval-harness.
    model_config = ConfigDict(extra="allow")

    path: str = "runs"


class LocalFilesStore(TraceStore):
    """Validation only: the run directory is the engine's own working surface."""

    Config = LocalFilesConfig
    mirrors = False

    def write_run(self, run_dir, stage: str) -> None:  # noqa: ANN001 - never called for local files
        return None
