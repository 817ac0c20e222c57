"""Where the viewer is and the URL of a run's page: what the CLI and the Dagster layer link to;
and the way back: a run's Dagster runs, partition and checks in the Dagster UI.

The viewer's address is configuration: ``Settings.viewer_url`` (``$EVALH_VIEWER_URL``, default
``http://127.0.0.1:8790``), read once at the edge and passed here; so is the Dagster UI's,
``Settings.dagster_url`` (``$EVALH_DAGSTER_URL``, default ``http://127.0.0.1:3000``). Nothing in
this package reads the environment, and the viewer never asks the Dagster instance: which
Dagster run made each stage is in the run folder (store/stage_runs.py).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from evalh_pipeline.common.settings import VIEWER_URL_ENV
from evalh_pipeline.models.stage_runs import StageRuns

__all__ = ["VIEWER_URL_ENV", "DagsterLink", "dagster_links", "is_loopback", "run_page_url", "running_viewer_run_url",
           "viewer_base_url", "viewer_is_running"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8790


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


# The stages in the order a run makes them (defs/evals/names.py STAGES; the view cannot import it).
_STAGE_ORDER = ("cases", "traces", "results", "summary", "drift")


@dataclass(frozen=True)
class DagsterLink:
    """One link from a viewer page to the Dagster UI: its text, its URL and what it opens."""

    text: str
    url: str
    title: str


def dagster_links(dagster_url: str, eval_name: str, run_id: str, stage_runs: StageRuns) -> list[DagsterLink]:
    """The links from a run's viewer pages back to Dagster at ``dagster_url``.

    Each Dagster run that made a stage of the run (its stages named, in run order: the
    whole run, then e.g. a re-judge's results to drift), the run's partition of the
    ``summary`` asset (its materialization and metadata), the summary's checks, and every
    Dagster run of the partition (the way in for a run with no record of its stages).
    """
    base = dagster_url.rstrip("/")
    summary = f"{base}/assets/{quote(eval_name, safe='')}/summary"
    made_by: dict[str, list[str]] = {}
    jobs: dict[str, str] = {}
    ordered = sorted(stage_runs.stages.items(), key=lambda item: (
        _STAGE_ORDER.index(item[0]) if item[0] in _STAGE_ORDER else len(_STAGE_ORDER), item[0]))
    for stage, made in ordered:
        made_by.setdefault(made.dagster_run_id, []).append(stage)
        jobs[made.dagster_run_id] = made.job
    links = [DagsterLink(f"run {dagster_run_id[:8]}", f"{base}/runs/{quote(dagster_run_id, safe='')}",
                         f"the Dagster run ({jobs[dagster_run_id]}) that made {', '.join(stages)}")
             for dagster_run_id, stages in made_by.items()]
    partition_filter = urlencode({"q[0]": f"tag:dagster/partition={run_id}"})
    links += [
        DagsterLink("partition", f"{summary}?{urlencode({'view': 'partitions', 'partition': run_id})}",
                    f"partition {run_id} of {eval_name}/summary: its materialization and metadata"),
        DagsterLink("checks", f"{summary}?view=checks", f"the checks of {eval_name}/summary, per run"),
        DagsterLink("all runs of the partition", f"{base}/runs?{partition_filter}",
                    f"every Dagster run of partition {run_id}"),
    ]
    return links
