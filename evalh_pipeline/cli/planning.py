"""`evalh plan`: size an eval from a pilot run (read-only; imports only click and the query modules)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import click

from evalh_pipeline.cli.group import EXIT_INFRA, _RunLocation, _store_options, main
from evalh_pipeline.cli.shared import _run_directory
from evalh_pipeline.terminal import error, escape_control

_SHARE = click.FloatRange(min=0, max=1, min_open=True, max_open=True)


@main.command()
@click.argument("run_dir", type=_RunLocation())
@click.option("--mde", type=click.FloatRange(min=0, max=1, min_open=True), required=True, metavar="SHARE",
              help="The smallest pass-rate change the eval must detect, as a share (0.05: five points).")
@click.option("--alpha", type=_SHARE, default=0.05, show_default=True, help="Two-sided significance level.")
@click.option("--power", type=_SHARE, default=0.8, show_default=True, help="Chance of detecting a change of --mde.")
@click.option("--cluster-by", metavar="FIELD", help="A field path of the case to cluster by (default: the "
              "pilot's run.cluster_by).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@_store_options
def plan(run_dir: str, mde: float, alpha: float, power: float, cluster_by: str | None, as_json: bool,
         store: str | None, namespace: tuple[str, ...]) -> None:
    """How many cases an eval needs to detect a pass-rate change of --mde, from the pilot run RUN_DIR."""
    from evalh_pipeline.queries.planning import plan_eval
    from evalh_pipeline.queries.report import text_table

    pilot = _run_directory(run_dir, store, namespace)
    try:
        answer = plan_eval(pilot, mde, alpha=alpha, power=power, cluster_by=cluster_by)
    except (OSError, ValueError) as exc:
        error(f"{type(exc).__name__}: {exc}")
        sys.exit(EXIT_INFRA)
    if as_json:
        click.echo(json.dumps(asdict(answer), indent=2, ensure_ascii=False))
        return
    lines = [f"pilot {answer.run_id}: cases needed to detect a change of {mde * 100:.1f} points "
             f"({power:.0%} power, two-sided alpha {alpha:g})", f"  {answer.formula}", ""]
    lines += text_table(
        ["variant", "vs", "pilot cases", "discordance psi", "cases needed", "clusters", "design effect",
         "with clustering"],
        [[r.variant, r.against or "(own pass rate)", str(r.pilot_cases), f"{r.discordance:.1%}", str(r.cases_needed),
          "–" if r.clusters is None else str(r.clusters),
          "–" if r.design_effect is None else f"{r.design_effect:.2f}",
          "–" if r.cases_needed_clustered is None else str(r.cases_needed_clustered)] for r in answer.rows])
    if answer.cluster_by is None:
        lines += ["", "no clustering: set run.cluster_by (or --cluster-by) when cases share a document or template"]
    click.echo(escape_control("\n".join(lines)))
