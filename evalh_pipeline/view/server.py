"""Serve the viewer with uvicorn on one address (loopback unless asked otherwise)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from evalh_pipeline.common.settings import DEFAULT_DAGSTER_URL
from evalh_pipeline.view.app import LOOPBACK_HOSTS, create_app


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(runs_dir: Path, host: str, port: int, dagster_url: str = DEFAULT_DAGSTER_URL) -> None:
    """Serve ``runs_dir`` until interrupted. On loopback, only loopback Host headers are answered.
    Run pages link back to the Dagster UI at ``dagster_url``."""
    import uvicorn

    allowed = (*LOOPBACK_HOSTS, host) if is_loopback(host) else None
    uvicorn.run(create_app(runs_dir, allowed_hosts=allowed, dagster_url=dagster_url), host=host, port=port, log_level="warning",
                access_log=False, server_header=False)
