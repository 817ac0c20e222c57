"""`evalh`: run and re-evaluate evals from a terminal or CI.

Commands that produce data go through the Dagster assets and the local instance, so the
UI shows what the CLI did; Dagster is imported only by those commands.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn
from rich.table import Table

from evalh_pipeline.config import ConfigError, EvalSpec, load_eval
from evalh_pipeline.models import RunSummary
from evalh_pipeline.runner.progress import NoProgress
from evalh_pipeline.store.run_dir import RunDirectory, new_run_id

EXIT_OK, EXIT_CONFIG, EXIT_INFRA, EXIT_INTERRUPTED = 0, 1, 2, 130

out = Console()
err = Console(stderr=True)


class BarProgress:
    """The runner's Progress protocol drawn as rich progress bars (one per phase)."""

    def __init__(self, bars: RichProgress) -> None:
        self.bars = bars
        self.tasks: dict[str, int] = {}

    def start(self, phase: str, total: int | None) -> None:
        self.tasks[phase] = self.bars.add_task(phase, total=total)

    def advance(self, phase: str, n: int = 1) -> None:
        self.bars.advance(self.tasks[phase], n)

    def finish(self, phase: str) -> None:
        task = self.tasks[phase]
        self.bars.update(task, total=self.bars.tasks[task].completed)


def _bars() -> RichProgress:
    return RichProgress(
        TextColumn("{task.description:>8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=False, disable=not err.is_terminal,
    )


def _load(eval_path: str) -> EvalSpec:
    try:
        return load_eval(eval_path)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] invalid eval config\n{exc}", highlight=False)
        sys.exit(EXIT_CONFIG)


def _materialize(action, spec: EvalSpec, run_id: str, max_concurrency: int | None, *, on_interrupt: str = ""):
    from evalh_pipeline.defs.launch import InfrastructureError, local_instance
    from evalh_pipeline.defs.resources import EvalhRuntime

    try:
        instance = local_instance()
        with _bars() as bars:
            # Without a terminal the bars are off: skip their per-cell bookkeeping too.
            progress = BarProgress(bars) if err.is_terminal else NoProgress()
            runtime = EvalhRuntime(progress=progress, max_concurrency=max_concurrency)
            return action(spec, run_id, instance=instance, runtime=runtime)
    except KeyboardInterrupt:
        err.print(f"interrupted. {on_interrupt}".rstrip(), highlight=False)
        sys.exit(EXIT_INTERRUPTED)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] invalid eval input\n{exc}", highlight=False)
        sys.exit(EXIT_CONFIG)
    except InfrastructureError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        sys.exit(EXIT_INFRA)
    except Exception as exc:  # noqa: BLE001 - anything unexpected is an infrastructure failure
        err.print(f"[red]error:[/red] {type(exc).__name__}: {exc}", highlight=False)
        sys.exit(EXIT_INFRA)


def _print_summary(summary: RunSummary, run_dir: RunDirectory) -> None:
    table = Table(title=f"run {summary.run_id}")
    for col in ("variant", "cases", "passed", "errored", "pass rate", "avg latency ms", "avg cost $"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for v in summary.variants:
        table.add_row(v.name, str(v.cases_total), str(v.cases_passed), str(v.cases_errored), f"{v.pass_rate:.1%}",
                      f"{v.avg_latency_ms:.1f}", "–" if v.avg_cost_usd is None else f"{v.avg_cost_usd:.6f}")
    out.print(table)
    if summary.comparison is not None:
        for d in summary.comparison.deltas:
            out.print(f"{d.variant} vs {summary.comparison.baseline}: pass rate {d.pass_rate_delta:+.1%}, "
                      f"{len(d.regressions)} regression(s), {len(d.improvements)} improvement(s)")
    out.print(f"run directory: {run_dir.path}")


@click.group()
@click.version_option(package_name="evalh-pipeline")
def main() -> None:
    """evalh: an evaluation harness for AI systems, orchestrated by Dagster."""


@main.command()
@click.argument("eval_path", type=click.Path(dir_okay=False))
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, exists=True),
              help="Finish a killed run: only cells without a trace are run.")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Override run.max_concurrency.")
def run(eval_path: str, resume_dir: str | None, max_concurrency: int | None) -> None:
    """Run EVAL_PATH (an eval.yaml): every case against every variant, then judge and summarize."""
    from evalh_pipeline.defs.launch import materialize_run

    spec = _load(eval_path)
    if resume_dir:
        run_dir = RunDirectory(Path(resume_dir).resolve())
        meta = run_dir.read_meta() if run_dir.exists() else None
        if meta is None or meta.get("eval_name") != spec.name:
            err.print(f"[red]error:[/red] {resume_dir} is not a run of eval {spec.name!r}")
            sys.exit(EXIT_CONFIG)
        run_id = run_dir.run_id
    else:
        run_id = new_run_id(spec.name)
    resume = f"Finish it with: evalh run {eval_path} --resume {Path(spec.runs_root) / run_id}"
    outcome = _materialize(materialize_run, spec, run_id, max_concurrency, on_interrupt=resume)
    _print_summary(outcome.summary, outcome.run_dir)


@main.command("re-evaluate")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--config", "eval_path", type=click.Path(dir_okay=False, exists=True),
              help="The eval.yaml whose evaluators to apply (default: the one the run was made from).")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Override run.max_concurrency.")
def re_evaluate(run_dir: str, eval_path: str | None, max_concurrency: int | None) -> None:
    """Re-judge the persisted traces of RUN_DIR with the current evaluators (never calls the system)."""
    from evalh_pipeline.defs.launch import materialize_reevaluation

    directory = RunDirectory(Path(run_dir).resolve())
    try:
        meta = directory.read_meta()
    except FileNotFoundError as exc:
        err.print(f"[red]error:[/red] {exc}")
        sys.exit(EXIT_CONFIG)
    spec = _load(eval_path or meta["config_path"])
    if Path(spec.runs_root).resolve() != directory.path.parent:
        # The run lives somewhere other than the eval's output folder: judge it in place.
        spec = _with_runs_root(spec, str(directory.path.parent))
    outcome = _materialize(materialize_reevaluation, spec, directory.run_id, max_concurrency)
    _print_summary(outcome.summary, outcome.run_dir)


def _with_runs_root(spec: EvalSpec, runs_root: str) -> EvalSpec:
    from dataclasses import replace

    return replace(spec, runs_root=runs_root)


if __name__ == "__main__":
    main()
