"""`evalh view`: serve a local, read-only web viewer over a runs folder (or one on object storage)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalh_pipeline.cli.group import EXIT_CONFIG, EXIT_INFRA, main
from evalh_pipeline.terminal import error, say, warning

if TYPE_CHECKING:
    from evalh_pipeline.outputs.runs_mirror import RunsMirror


@main.command()
@click.argument("runs_dir", required=False)
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Port to listen on (default 8790).")
@click.option("--host", default=None, help="Address to bind (default 127.0.0.1, loopback only).")
@click.option("--by", "labeller", help="Who the review queue's labels are by (default: the current user).")
@click.option("--accept-remote-labels", is_flag=True,
              help="Accept the review queue's labels from other machines too (default: this machine only).")
@click.pass_context
def view(ctx: click.Context, runs_dir: str | None, port: int | None, host: str | None, labeller: str | None,
         accept_remote_labels: bool) -> None:
    """Browse the runs in RUNS_DIR (default $EVALH_RUNS_DIR or ./runs) in a web browser.

    RUNS_DIR may be an eval's output URL (s3://bucket/runs) or one run's URL under it: the
    viewer reads a local copy kept up to date with it, and writes nothing there but labels.

    Runs, a run's case × variant matrix, a cell's traces side by side, run-over-run and
    variant-over-variant comparison, an eval's history, and a review queue per run whose
    answers are stored as human labels (the only thing it writes). Nothing is fetched from
    the internet.
    """
    import getpass

    from evalh_pipeline.view.links import DEFAULT_HOST, DEFAULT_PORT
    from evalh_pipeline.view.server import is_loopback, serve

    mirror, first_page = None, "/"
    if runs_dir is not None and "://" in runs_dir:
        mirror, first_page = _mirror(runs_dir, ctx.obj.cache)
        folder = mirror.root
    else:
        folder = (Path(runs_dir) if runs_dir else ctx.obj.runs_dir or Path("runs")).resolve()
    if not folder.is_dir():
        error(f"{folder}: no such runs folder (give RUNS_DIR, or set EVALH_RUNS_DIR)")
        sys.exit(EXIT_CONFIG)
    host = host or DEFAULT_HOST
    port = DEFAULT_PORT if port is None else port
    if not is_loopback(host):
        warning(f"serving on {host}: anyone who can reach it can read every run in {mirror.url if mirror else folder}"
                + (" and add labels to its evals" if accept_remote_labels else ""))
    shown = f"[{host}]" if ":" in host else host
    where = f"{_safe_url(mirror.url)}, copied to {folder}" if mirror else str(folder)
    say(f"evalh view: http://{shown}:{port}{first_page}  ({where}; Ctrl-C stops it)")
    serve(folder, host, port, dagster_url=ctx.obj.dagster_url, labeller=labeller or getpass.getuser(),
          remote_labels=accept_remote_labels, mirror=mirror)


def _mirror(url: str, cache: Path) -> tuple[RunsMirror, str]:
    """The local copy of the runs folder (or the one run) at ``url``, brought up to date, and the
    page to open first; storage it cannot read is one line, exit 2, nothing copied."""
    from evalh_pipeline.cli.shared import _storage_error
    from evalh_pipeline.outputs.runs_mirror import RunsMirror
    from evalh_pipeline.view.rendering import part

    try:
        mirror = RunsMirror(url, cache)
        if mirror.fs.exists(f"{mirror.remote}/run.json"):  # one run's URL: its runs folder, that run alone
            folder, run_id = url.rstrip("/").rsplit("/", 1)
            mirror = RunsMirror(folder, cache, only=run_id)
        mirror.sync()
    except Exception as exc:  # noqa: BLE001 - unknown protocol, no credentials, unreachable, unreadable
        error(f"cannot read {_safe_url(url)}: {_storage_error(exc)}")
        sys.exit(EXIT_INFRA)
    return mirror, f"/runs/{part(mirror.only)}" if mirror.only else "/"


def _safe_url(url: str) -> str:
    from evalh_pipeline.cli.shared import _safe_store

    return _safe_store(url)
