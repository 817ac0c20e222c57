"""Serve the viewer with uvicorn on one address (loopback unless asked otherwise)."""

from __future__ import annotations

from pathlib import Path

from evalh_pipeline.common.settings import DEFAULT_DAGSTER_URL
from evalh_pipeline.outputs.runs_mirror import RunsMirror
from evalh_pipeline.view.app import LOOPBACK_HOSTS, create_app
from evalh_pipeline.view.links import is_loopback

__all__ = ["is_loopback", "serve"]


def serve(runs_dir: Path, host: str, port: int, dagster_url: str = DEFAULT_DAGSTER_URL, *, labeller: str = "viewer",
          remote_labels: bool = False, mirror: RunsMirror | None = None) -> None:
    """Serve ``runs_dir`` until interrupted. On loopback, only loopback Host headers are answered.
    Run pages link back to the Dagster UI at ``dagster_url``; the review queue's labels are by
    ``labeller``, and accepted from other machines only with ``remote_labels``; ``mirror``: the
    runs folder on object storage ``runs_dir`` is a copy of (view/app.py)."""
    import uvicorn

    allowed = (*LOOPBACK_HOSTS, host) if is_loopback(host) else None
    app = create_app(runs_dir, allowed_hosts=allowed, dagster_url=dagster_url, labeller=labeller,
                     remote_labels=remote_labels, mirror=mirror)
    uvicorn.run(app, host=host, port=port, log_level="warning",
                access_log=False, server_header=False)
