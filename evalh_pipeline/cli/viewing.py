"""`evalh view`: serve a local, read-only web viewer over a runs folder."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalh_pipeline.cli.group import EXIT_CONFIG, main
from evalh_pipeline.terminal import error, say, warning


@main.command()
@click.argument("runs_dir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Port to listen on (default 8790).")
@click.option("--host", default=None, help="Address to bind (default 127.0.0.1, loopback only).")
@click.option("--by", "labeller", help="Who the review queue's labels are by (default: the current user).")
@click.option("--accept-remote-labels", is_flag=True,
              help="Accept the review queue's labels from other machines too (default: this machine only).")
@click.pass_context
def view(ctx: click.Context, runs_dir: Path | None, port: int | None, host: str | None, labeller: str | None,
         accept_remote_labels: bool) -> None:
    """Browse the runs in RUNS_DIR (default $EVALH_RUNS_DIR or ./runs) in a web browser.

    Runs, a run's case × variant matrix, a cell's traces side by side, run-over-run and
    variant-over-variant comparison, an eval's history, and a review queue per run whose
    answers are stored as human labels (the only thing it writes). Nothing is fetched from
    the internet.
    """
    import getpass

    from evalh_pipeline.view.links import DEFAULT_HOST, DEFAULT_PORT
    from evalh_pipeline.view.server import is_loopback, serve

    folder = (runs_dir or ctx.obj.runs_dir or Path("runs")).resolve()
    if not folder.is_dir():
        error(f"{folder}: no such runs folder (give RUNS_DIR, or set EVALH_RUNS_DIR)")
        sys.exit(EXIT_CONFIG)
    host = host or DEFAULT_HOST
    port = DEFAULT_PORT if port is None else port
    if not is_loopback(host):
        warning(f"serving on {host}: anyone who can reach it can read every run in {folder}"
                + (" and add labels to its evals" if accept_remote_labels else ""))
    shown = f"[{host}]" if ":" in host else host
    say(f"evalh view: http://{shown}:{port}/  ({folder}; Ctrl-C stops it)")
    serve(folder, host, port, dagster_url=ctx.obj.dagster_url, labeller=labeller or getpass.getuser(),
          remote_labels=accept_remote_labels)
