"""Where the viewer is and the URL of a run's page: what the CLI and the Dagster layer link to.

The viewer's address is configuration: ``Settings.viewer_url`` (``$EVALH_VIEWER_URL``, default
``http://127.0.0.1:8790``), read once at the edge and passed here; nothing in this package reads
the environment.
"""

from __future__ import annotations

from urllib.parse import quote

from evalh_pipeline.common.settings import VIEWER_URL_ENV

__all__ = ["VIEWER_URL_ENV", "run_page_url", "running_viewer_run_url", "viewer_base_url", "viewer_is_running"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8790


def viewer_base_url(configured: str | None = None, port: int = DEFAULT_PORT) -> str:
    """The viewer's base URL: ``configured`` (``$EVALH_VIEWER_URL``) if set, else loopback at ``port``."""
    if configured and configured.strip():
        return configured.strip().rstrip("/")
    return f"http://{DEFAULT_HOST}:{port}"


def run_page_url(run_id: str, configured: str | None = None, port: int = DEFAULT_PORT) -> str:
    """The URL of ``run_id``'s page in the viewer (``/runs/<run_id>``)."""
    return f"{viewer_base_url(configured, port)}/runs/{quote(run_id, safe='')}"


def viewer_is_running(base_url: str, timeout_s: float = 0.5) -> bool:
    """Whether an `evalh view` answers at ``base_url`` (its ``/healthz`` says so), within ``timeout_s``."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/healthz", timeout=timeout_s) as response:  # noqa: S310 - the configured viewer
            return bool(response.status == 200 and response.read(64).startswith(b"evalh view"))
    except (OSError, ValueError, urllib.error.URLError):
        return False


def running_viewer_run_url(run_id: str, configured: str | None = None, port: int = DEFAULT_PORT,
                           timeout_s: float = 0.5) -> str | None:
    """``run_id``'s page when a viewer answers at the configured address, else None (what `evalh run` prints)."""
    if not viewer_is_running(viewer_base_url(configured, port), timeout_s):
        return None
    return run_page_url(run_id, configured, port)
