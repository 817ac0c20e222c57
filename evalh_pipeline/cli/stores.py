"""`evalh runs`: list the runs in a trace store (read-only)."""

from __future__ import annotations

import json

import click

from evalh_pipeline.cli.group import main
from evalh_pipeline.cli.shared import _namespace, _opened_store


@main.command("runs")
@click.option("--store", "store", metavar="URL", required=True,
              help="The trace store: sqlite:///runs.db or postgresql://…")
@click.option("--namespace", "namespace", multiple=True, metavar="KEY=VALUE",
              help="Only runs filed under this namespace (repeat for several keys).")
@click.option("--eval", "eval_name", help="Only runs of this eval.")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
def runs(store: str, namespace: tuple[str, ...], eval_name: str | None, as_json: bool) -> None:
    """List the runs in a trace store (read-only)."""
    with _opened_store(store, "read") as reader:
        found = reader.list_runs(_namespace(namespace), eval_name)
    if as_json:
        click.echo(json.dumps([{"run_id": r.run_id, "eval_name": r.eval_name, "namespace": r.namespace,
                                "created_at": r.created_at, "traces": r.traces, "results": r.results}
                               for r in found], indent=2))
        return
    from evalh_pipeline.queries.report import text_table

    rows = [[r.run_id, r.eval_name or "–", ",".join(f"{k}={v}" for k, v in sorted((r.namespace or {}).items())) or "–",
             str(r.traces), str(r.results)] for r in found]
    click.echo("\n".join(text_table(["run", "eval", "namespace", "traces", "results"], rows)))
    click.echo(f"{len(found)} run(s)")
