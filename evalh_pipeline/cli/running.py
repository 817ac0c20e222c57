"""`evalh run`, `re-evaluate` and `retry-failed`: the commands that produce data, and how their
outcome is printed. Each adds its eval run's partition to the Dagster instance and executes
the eval's job for that partition in this process (defs/launch.py): the steps do the work."""

from __future__ import annotations

import gc
import json
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NoReturn, overload

import click

from evalh_pipeline.cli.group import EXIT_CONFIG, EXIT_GATE, EXIT_INFRA, EXIT_INTERRUPTED, _RunLocation, main
from evalh_pipeline.cli.shared import (
    _holding, _load, _located, _masked, _run_directory, _runs_folder, _settings, _spec_for_run, _steps_elsewhere,
    _storage_error,
)
from evalh_pipeline.queries.rate_limits import rate_limit_records
from evalh_pipeline.store.run_dir import RunDirectory, new_run_id
from evalh_pipeline.terminal import err, error, escape_control, out, percentage_points, plural, say, table, warning

if TYPE_CHECKING:
    from evalh_pipeline.config import EvalSpec
    from evalh_pipeline.defs.launch import JudgeMeasurement, Promotion
    from evalh_pipeline.defs.run_options import RunOutcome
    from evalh_pipeline.models import RunSummary


@main.command()
@click.argument("eval_path", type=click.Path())
@click.option("--resume", "resume_dir", type=_RunLocation(),
              help="Finish a killed run (its folder, or its URL under a URL output): only cells without a trace are run.")
@click.option("--reuse", "reuse_dir", type=_RunLocation(),
              help="Reuse the traces of this earlier run (its folder, or its URL) whose case, variant and fixture "
                   "are unchanged: only new or changed cells call the system.")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Override run.max_concurrency.")
@click.option("--dry-run", is_flag=True,
              help="Validate the config and every dataset row, print the plan; write nothing.")
@click.option("--limit", type=click.IntRange(min=1), help="Keep the first N selected cases (after filter and sample).")
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE",
              help="Keep cases whose KEY (metadata.KEY, or a dotted path into the case) equals VALUE. "
                   "Repeat a key for OR, use several keys for AND; narrows dataset.filter.")
@click.option("--fail-on-gate", is_flag=True,
              help="Exit 1 when a gate or the completeness check fails (for CI); the run is still complete.")
@click.option("--strict", is_flag=True,
              help="Make config warnings (keys eval-harness tolerates and evalh ignores) errors.")
@click.option("--shards", metavar="N|auto",
              help="Cut the run's cells into N shards, each a step of its own (run.shards; default auto: "
                   "from the cells, the systems and the cores; 1: one process).")
def run(eval_path: str, resume_dir: str | None, reuse_dir: str | None, max_concurrency: int | None, dry_run: bool,
        limit: int | None, filters: tuple[str, ...], fail_on_gate: bool, strict: bool, shards: str | None) -> None:
    """Run EVAL_PATH (an eval.yaml): every case against every variant, then judge and summarize."""
    _require_eval_file(eval_path)
    spec = _select(_load(eval_path, strict), filters, limit)
    if shards is not None:
        if resume_dir:
            error("--shards cuts a new run; a resumed run keeps the shards it started with (its run.json)")
            sys.exit(EXIT_CONFIG)
        spec = _sharded(spec, shards)
    if dry_run:
        _print_plan(spec, resume_dir, max_concurrency)
        return
    selecting = bool(filters) or limit is not None
    if resume_dir and reuse_dir:
        error("--resume finishes a run, --reuse starts one: give one of them")
        sys.exit(EXIT_CONFIG)
    reuse_from = _reuse_source(spec, reuse_dir) if reuse_dir else None
    if resume_dir:
        if selecting:
            error("--limit and --filter choose the cases of a new run; a resumed run keeps the cases it started with")
            sys.exit(EXIT_CONFIG)
        # A run published to a URL is finished in its working copy here, brought up to date first.
        run_dir = _run_directory(resume_dir, writing=True) if "://" in resume_dir else RunDirectory(Path(resume_dir).resolve())
        resume_dir = str(run_dir.path)
        meta = run_dir.read_meta() if run_dir.exists() else None
        if meta is None or meta.get("eval_name") != spec.name:
            error(f"{resume_dir} is not a run of eval {spec.name!r}")
            sys.exit(EXIT_CONFIG)
        run_id = run_dir.run_id
        spec = _laid_out(_located(spec, run_dir), run_dir=run_dir)
    else:
        run_id = new_run_id(spec.name)
        # The dataset is read before anything reaches the Dagster instance (as the config is):
        # an error there must not leave a partition and a failed Dagster run behind.
        spec = _laid_out(spec, cases=_counted_cases(spec, run_id))
    _require_run_id(run_id)
    _require_deployment(spec)
    resume = f"Finish it with: evalh run {eval_path} --resume {_run_location(spec, run_id)}"
    err.line(f"{'resuming' if resume_dir else 'starting'} run {run_id} in {Path(spec.runs_root).resolve() / run_id}")
    with _holding(Path(spec.runs_root) / run_id if resume_dir else None, "evalh run --resume",
                  steps_elsewhere=_steps_elsewhere(spec)):
        outcome = _materialize("run", spec, run_id, max_concurrency, on_interrupt=resume, reuse_from=reuse_from,
                               holding=bool(resume_dir), deployment_checked=True)
    _print_outcome(outcome, spec)
    if reuse_from:
        _print_reuse(outcome, reuse_from)
    _print_ui_visibility(spec)
    _print_viewer_link(spec, run_id)
    if fail_on_gate and outcome.failed_checks:
        sys.exit(EXIT_GATE)


def _reuse_source(spec: EvalSpec, reuse_dir: str) -> str:
    """``--reuse``'s run as the traces step finds it (tag ``evalh/reuse_from``): a run of the
    eval's own URL output by its id (the step brings its machine's working copy of it up to
    date, as here), a fetched copy of a run at another URL, else the folder."""
    from evalh_pipeline.outputs.publishing import is_remote, run_url

    if "://" in reuse_dir:
        run_id = reuse_dir.rstrip("/").rsplit("/", 1)[-1]
        own = bool(spec.outputs) and is_remote(spec.outputs[0]) and run_url(spec.outputs[0], run_id) == reuse_dir.rstrip("/")
        copy = _run_directory(reuse_dir, writing=own)
        return run_id if own else str(copy.path)
    previous = RunDirectory(Path(reuse_dir).resolve())
    if not previous.exists():
        error(f"--reuse {reuse_dir}: not a run directory (no run.json)")
        sys.exit(EXIT_CONFIG)
    return str(previous.path)


def _sharded(spec: EvalSpec, shards: str) -> EvalSpec:
    """``spec`` with ``run.shards`` from ``--shards`` (a number of 1 or more, or auto); else one line, exit 1."""
    from dataclasses import replace

    from pydantic import ValidationError

    from evalh_pipeline.config.schema import RunConfig

    try:
        value: int | str = int(shards) if shards.strip().lstrip("-").isdigit() else shards.strip()
        run = RunConfig.model_validate({**spec.config.run.model_dump(), "shards": value})
    except ValidationError as exc:
        error(f"--shards {shards}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}")
        sys.exit(EXIT_CONFIG)
    return replace(spec, config=spec.config.model_copy(update={"run": run}))


def _laid_out(spec: EvalSpec, *, cases: int = 0, run_dir: RunDirectory | None = None) -> EvalSpec:
    """``spec`` with the executor and shard count its run uses (runner/shards.py ``choose_layout``):
    from the ``cases`` of a new run, or for ``run_dir`` (a run that exists) from the shards its
    run.json records and its cases snapshot."""
    from evalh_pipeline.runner.cells import count_cases
    from evalh_pipeline.runner.shards import choose_layout, cpu_bound, laid_out, recorded_shards, usable_cores

    run = spec.config.run
    if run_dir is not None:
        run = run.model_copy(update={"shards": len(recorded_shards(run_dir))})
        cases = count_cases(run_dir.cases)
    cells = cases * len(spec.variants) * run.samples_per_case
    return laid_out(spec, choose_layout(run, cells, cores=usable_cores(), cpu_bound=cpu_bound(spec)))


def _layout_line(spec: EvalSpec, cases: int, run_dir: RunDirectory | None) -> str:
    """The dry run's line for where the run's steps would run: its shards and executor, and why."""
    run = spec.config.run
    existing = run_dir is not None and run_dir.exists()
    chosen = _laid_out(spec, cases=cases, run_dir=run_dir if existing else None).config.run
    how = [name for name, value in (("shards", run.shards), ("executor", run.executor.type)) if value == "auto"]
    return (f"shards: {chosen.shards} on executor {chosen.executor.type}"
            + (" (as the run started)" if existing else f" ({' and '.join(how)} chosen: run.cells_per_shard "
                                                          f"{run.cells_per_shard})" if how else ""))


def _require_run_id(run_id: str) -> None:
    """A run folder whose name cannot be a run id (a Dagster partition key): one line, exit 1."""
    from evalh_pipeline.defs.evals.names import run_id_problem

    problem = run_id_problem(run_id)
    if problem:
        error(problem)
        sys.exit(EXIT_CONFIG)


def _print_reuse(outcome: RunOutcome, reuse_from: str) -> None:
    """Say how many cells a ``--reuse`` run copied and how many called the system."""
    from evalh_pipeline.runner.reuse import recorded_reuse

    reused = (recorded_reuse(outcome.run_dir) or {}).get("reused", 0)
    done = outcome.summary.completeness
    cells = done.present_cells if done else sum(v.cases_total for v in outcome.summary.variants)
    say(f"reused {reused} of {cells} cell(s) from {Path(reuse_from).name}; {cells - reused} called the system")


def _print_ui_visibility(spec: EvalSpec) -> None:
    """Say how to see an eval outside the code location's folders in the UI (not as orphan assets)."""
    import os

    from evalh_pipeline.defs.discovery import EVALS_DIR_ENV, evals_dirs, project_evals_dir, visible_in_ui

    if not visible_in_ui(spec.path):
        folders = ":".join(str(f) for f in evals_dirs(project_evals_dir()))
        extra = f":{os.environ[EVALS_DIR_ENV]}" if os.environ.get(EVALS_DIR_ENV) else ""
        err.line(f"note: {spec.path} is outside the UI's evals folder ({folders}); to see its runs in the UI: "
                 f"{EVALS_DIR_ENV}={spec.eval_dir}{extra} ./dev ui")


def _print_viewer_link(spec: EvalSpec, run_id: str) -> None:
    """The run's page in `evalh view`, when a viewer answers at ``$EVALH_VIEWER_URL`` (or the default port)."""
    from evalh_pipeline.view.links import running_viewer_run_url

    # A short wait: a viewer that does not answer at once is not worth holding the prompt for.
    url = running_viewer_run_url(run_id, spec.settings.viewer_url, timeout_s=2.0)
    if url:
        say(f"viewer: {url}")


def _require_eval_file(eval_path: str) -> None:
    """A folder given where the eval file belongs: say which file to give (exit 1, a usage error)."""
    folder = Path(eval_path)
    if not folder.is_dir():
        return
    candidates = sorted(p for p in folder.glob("*.y*ml") if p.suffix in (".yaml", ".yml"))
    hint = f"; eval files there: {', '.join(str(p) for p in candidates)}" if candidates else ""
    error(f"{eval_path} is a folder: give the eval's YAML file (evalh run path/to/eval.yaml){hint}")
    sys.exit(EXIT_CONFIG)


def _select(spec: EvalSpec, filters: tuple[str, ...], limit: int | None) -> EvalSpec:
    """``spec`` narrowed by ``--filter`` / ``--limit`` (unchanged without them)."""
    from evalh_pipeline.config.dataset import parse_filter_args, with_selection

    try:
        rules = parse_filter_args(filters)
    except ValueError as exc:
        error(str(exc))
        sys.exit(EXIT_CONFIG)
    return with_selection(spec, rules, limit)


def _counted_cases(spec: EvalSpec, run_id: str) -> int:
    """How many cases run ``run_id`` of ``spec`` would have, every dataset row read as the run
    reads it; a dataset error is one message and exit 1."""
    from evalh_pipeline.config import ConfigError
    from evalh_pipeline.config.dataset import select_cases

    try:
        return sum(1 for _ in select_cases(spec, run_id))
    except ConfigError as exc:
        error(f"invalid eval input\n{_masked(exc, spec)}")
        sys.exit(EXIT_CONFIG)


def _print_plan(spec: EvalSpec, resume_dir: str | None, max_concurrency: int | None) -> None:
    """`run --dry-run`: read every dataset row as a real run would, import each python_function
    target, look up each cli program, build each http endpoint's URL; write nothing, no Dagster.
    A problem found is one line each and exit 1."""
    run_id = RunDirectory(Path(resume_dir).resolve()).run_id if resume_dir else new_run_id(spec.name)
    cases = _counted_cases(spec, run_id)
    run_cfg = spec.config.run
    samples = run_cfg.samples_per_case
    dataset = spec.config.dataset
    selection = [f"filter {json.dumps(dataset.filter, default=str)}" if dataset.filter else "",
                 f"sample {dataset.sample}" if dataset.sample is not None else "",
                 f"limit {spec.case_limit}" if spec.case_limit is not None else ""]
    lines = [
        f"dry run of {spec.name} ({spec.path}): nothing is written",
        f"variants: {len(spec.variants)} ({', '.join(spec.variant_names)})",
        f"dataset: {spec.dataset_path}" + (f" ({'; '.join(s for s in selection if s)})" if any(selection) else ""),
        f"cases: {cases}",
        f"cells: {cases * len(spec.variants) * samples} ({plural(cases, 'case')} × {plural(len(spec.variants), 'variant')}"
        f" × {plural(samples, 'sample')})",
        f"concurrency: {max_concurrency or run_cfg.max_concurrency}"
        + (f" (per variant {run_cfg.per_variant_concurrency})" if run_cfg.per_variant_concurrency else ""),
        _layout_line(spec, cases, RunDirectory(Path(resume_dir).resolve()) if resume_dir else None),
        f"evaluators: {', '.join(e.name for e in spec.config.evaluators) or '–'}",
        f"output folder: {Path(spec.runs_root).resolve()}"
        + (f" (working copy of {spec.outputs[0]})" if spec.outputs and "://" in spec.outputs[0] else "")
        + (f"; mirrors: {', '.join(spec.outputs[1:])}" if len(spec.outputs) > 1 else ""),
    ]
    if spec.stores:
        from evalh_pipeline.outputs.sync import build_stores

        stores = build_stores(spec)
        lines.append("trace stores: " + ", ".join(
            store.label + (f" (namespace {', '.join(f'{k}={v}' for k, v in store.namespace.items())})"
                           if store.namespace else "") for store in stores))
    if resume_dir:
        lines.append(f"resume: {resume_dir} (keeps the cases it started with; only cells without a trace run)")
    for line in lines:
        say(line)
    from evalh_pipeline.runner.preflight import preflight_problems

    from evalh_pipeline.defs.instance_config import instance_home
    from evalh_pipeline.runner.deployment import deployment_problems

    problems = preflight_problems(spec) + deployment_problems(spec, instance_home() / "dagster.yaml")
    if problems:
        # One line each: file:line, the system's key, which system and what a run would meet.
        error(f"{plural(len(problems), 'problem')} a run would meet\n" + "\n".join(map(str, problems)))
        sys.exit(EXIT_CONFIG)


@main.command("re-evaluate")
@click.argument("run_dir", type=_RunLocation())
@click.option("--config", "eval_path", type=click.Path(dir_okay=False, exists=True),
              help="The eval.yaml whose evaluators to apply (default: the one the run was made from).")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Override run.max_concurrency.")
@click.option("--all", "rejudge_all", is_flag=True,
              help="Re-judge every result, not only those of evaluators whose config changed and of new traces.")
@click.option("--repeat-judging", "repeats", type=int, metavar="K",
              help="Measure the judges instead: judge each trace K times (K >= 2) with every evaluator that "
                   "calls a model, write the flip rates to judge_consistency.jsonl; results are not changed.")
def re_evaluate(run_dir: str, eval_path: str | None, max_concurrency: int | None, rejudge_all: bool,
                repeats: int | None) -> None:
    """Re-judge the persisted traces of RUN_DIR with the current evaluators (never calls the system).

    Only results whose evaluator config changed (or whose trace is new) are judged again;
    the others are kept as they are. --all re-judges everything. It is one Dagster run of
    the eval's judge job on the run's partition: results, summary and drift.

    --repeat-judging K judges every trace K times with each judge and reports how often its
    verdicts on a cell disagree (the flip rate); it writes judge_consistency.jsonl only."""
    if repeats is not None and repeats < 2:
        error(f"--repeat-judging {repeats}: K must be 2 or more (a verdict per cell cannot disagree with itself)")
        sys.exit(EXIT_CONFIG)
    if repeats is not None and rejudge_all:
        error("--repeat-judging measures the judges and leaves the results as they are: it does not take --all")
        sys.exit(EXIT_CONFIG)
    if "://" not in run_dir and not Path(run_dir).exists() and eval_path is not None:
        # A bare run id with --config: the run lives in that eval's runs folder (its URL, for a URL output).
        run_dir = _run_location(_load(eval_path), run_dir)
    directory = _run_directory(run_dir, writing=True)
    _require_run_id(directory.run_id)
    spec = _spec_for_run(directory, eval_path)
    if repeats is not None:
        _repeat_judging(spec, directory, repeats, max_concurrency)
        return
    spec = _laid_out(spec, run_dir=directory)  # its shards judge side by side
    err.line(f"re-evaluating run {directory.run_id} in {directory.path}")
    again = (f"Finish it with: evalh re-evaluate {_run_location(spec, directory.run_id)}"
             + (f" --config {eval_path}" if eval_path else ""))
    with _holding(directory.path, "evalh re-evaluate", steps_elsewhere=_steps_elsewhere(spec)):
        outcome = _materialize("judge", spec, directory.run_id, max_concurrency, on_interrupt=again,
                               rejudge_all=rejudge_all, holding=True)
    _print_outcome(outcome, spec)
    from evalh_pipeline.runner.evaluation import last_evaluation

    counts = last_evaluation(directory)
    if counts is not None:
        changed = ", ".join(counts["evaluators_rejudged"]) or "none"
        say(f"re-judged {counts['results']} result(s) (changed evaluators: {changed}; "
            f"{counts['traces_appended']} new trace(s)); kept {counts['results_kept']} unchanged")


def _repeat_judging(spec: EvalSpec, directory: RunDirectory, repeats: int, max_concurrency: int | None) -> None:
    """`re-evaluate --repeat-judging K`: the eval's judge-consistency job on the run's partition
    (a Dagster run, as every route), then each judge's flip rate, one line per evaluator."""
    from evalh_pipeline.models import JudgeConsistency

    err.line(f"judging every trace of run {directory.run_id} {repeats} times with each judge "
             "(no system call; results are not changed)")
    with _holding(directory.path, "evalh re-evaluate --repeat-judging"):
        _materialize("judge_consistency", spec, directory.run_id, max_concurrency, repeats=repeats, holding=True)
    measured = [JudgeConsistency.model_validate_json(line)
                for line in directory.judge_consistency.read_text(encoding="utf-8").splitlines() if line.strip()]
    for line in measured:
        name = escape_control(line.evaluator)
        if line.skipped is not None:
            say(f"{name}: skipped, {line.skipped}")
        elif line.flip_rate is None or line.ci_low is None or line.ci_high is None:
            say(f"{name}: no cell judged {repeats} times with a verdict each time"
                + (f" ({plural(line.errored, 'cell')} errored)" if line.errored else ""))
        else:
            say(f"{name}: flip rate {line.flip_rate:.1%} (95% CI {line.ci_low * 100:.1f}–{line.ci_high * 100:.1f}%) "
                f"over {plural(line.cells, 'cell')}, K={line.repeats}"
                + (f"; {plural(line.errored, 'cell')} left out (a repeat errored)" if line.errored else ""))
    say(f"wrote {directory.judge_consistency}")


@main.command("retry-failed")
@click.argument("run_dir", type=_RunLocation())
@click.option("--include-evaluator-failures", is_flag=True,
              help="Also retry cells where an evaluator errored (raised), not only cells whose system call errored. "
                   "Results a judge could not give are judged again from the saved traces either way (no system call).")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Override run.max_concurrency.")
def retry_failed(run_dir: str, include_evaluator_failures: bool, max_concurrency: int | None) -> None:
    """Run the failed cells of RUN_DIR again, replacing their traces and results."""
    from evalh_pipeline.runner.retry import not_judged_results, prepare_retry

    directory = _run_directory(run_dir, writing=True)
    _require_run_id(directory.run_id)
    spec = _laid_out(_spec_for_run(directory, None), run_dir=directory)
    with _holding(directory.path, "evalh retry-failed", steps_elsewhere=_steps_elsewhere(spec)):
        retried = prepare_retry(directory, include_evaluator_failures=include_evaluator_failures)
        say(f"retrying {plural(retried, 'failed cell')} of {directory.run_id}")
        if (unjudged := not_judged_results(directory)):
            # Judged again by the run's evaluation from their saved traces, whatever the flag.
            say(f"judging {plural(unjudged, 'result')} again that could not be judged (no system call)")
        resume = f"Finish it with: evalh run {spec.path} --resume {_run_location(spec, directory.run_id)}"
        outcome = _materialize("run", spec, directory.run_id, max_concurrency, on_interrupt=resume, holding=True)
    _print_outcome(outcome, spec)
    say(f"retried {plural(retried, 'cell')}")


@overload
def _materialize(job: Literal["run", "judge"], spec: EvalSpec, run_id: str, max_concurrency: int | None, *,
                 on_interrupt: str = "", reuse_from: str | None = None, rejudge_all: bool = False,
                 holding: bool = False, deployment_checked: bool = False, repeats: int = 0) -> RunOutcome: ...
@overload
def _materialize(job: Literal["promote"], spec: EvalSpec, run_id: str, max_concurrency: int | None, *,
                 on_interrupt: str = "", reuse_from: str | None = None, rejudge_all: bool = False,
                 holding: bool = False, deployment_checked: bool = False, repeats: int = 0) -> Promotion: ...
@overload
def _materialize(job: Literal["judge_consistency"], spec: EvalSpec, run_id: str, max_concurrency: int | None, *,
                 on_interrupt: str = "", reuse_from: str | None = None, rejudge_all: bool = False,
                 holding: bool = False, deployment_checked: bool = False, repeats: int = 0) -> JudgeMeasurement: ...
def _materialize(job: str, spec: EvalSpec, run_id: str, max_concurrency: int | None, *, on_interrupt: str = "",
                 reuse_from: str | None = None, rejudge_all: bool = False, holding: bool = False,
                 deployment_checked: bool = False, repeats: int = 0) -> RunOutcome | Promotion | JudgeMeasurement:
    """Execute the eval's ``job`` (``run``, ``judge``, ``promote`` or ``judge_consistency``, which
    judges each trace ``repeats`` times) for the partition ``run_id``
    in this process, and map its failures to exit codes.

    ``holding``: the command holds the run directory's lock, so any CLI Dagster run of this
    partition still recorded as in progress was left by a killed evalh: it is marked failed.
    ``deployment_checked``: the caller ran :func:`_require_deployment` already.
    """
    from evalh_pipeline.config import ConfigError
    from evalh_pipeline.defs.run_options import NoSystemAnswered, RunOptions, RunOutcome
    from evalh_pipeline.errors import InfrastructureError
    from evalh_pipeline.terminal import BarProgress, LineProgress, progress_bars

    if not deployment_checked:
        _require_deployment(spec)

    def launch(options: RunOptions) -> RunOutcome | Promotion | JudgeMeasurement:
        with _long_lived_objects():
            from evalh_pipeline.defs import launch as dagster

            instance = dagster.local_instance()
        if holding:
            for ended in dagster.end_abandoned_runs(instance, spec.name, run_id, f"finished by `evalh {job}` "
                                                    f"(process {os.getpid()})"):
                err.line(f"marked Dagster run {ended} of {run_id} failed: the evalh that ran it was killed")
        if job == "judge_consistency":
            return dagster.materialize_judge_consistency(spec, run_id, repeats, instance=instance, runtime=options)
        if job == "promote":
            return dagster.materialize_promotion(spec, run_id, instance=instance, runtime=options)
        action = {"run": dagster.materialize_run, "judge": dagster.materialize_reevaluation}[job]
        return action(spec, run_id, instance=instance, runtime=options)

    started = datetime.now(timezone.utc)
    try:
        # The assets use `spec` itself (the run's resource), so a run named on the command
        # line is worked on where it is, even outside the eval's output folder.
        if err.is_terminal:
            # The context manager hides the cursor and shows it again on any exit, Ctrl-C included.
            with progress_bars() as bars:
                outcome = launch(RunOptions(progress=BarProgress(bars), max_concurrency=max_concurrency,
                                            reuse_from=reuse_from, rejudge_all=rejudge_all))
        else:
            # A CI log gets one line per phase start and end instead of bars.
            outcome = launch(RunOptions(progress=LineProgress(), max_concurrency=max_concurrency,
                                        reuse_from=reuse_from, rejudge_all=rejudge_all))
        if isinstance(outcome, RunOutcome):  # promote publishes no run files
            _print_publishing(spec, outcome.run_dir, started)
        return outcome
    except KeyboardInterrupt:
        err.line(f"interrupted. {on_interrupt}".rstrip())
        sys.exit(EXIT_INTERRUPTED)
    except ConfigError as exc:
        error(f"invalid eval input\n{_masked(exc, spec)}")
        sys.exit(EXIT_CONFIG)
    except NoSystemAnswered as exc:
        _print_no_answer(exc, spec, run_id)
    except InfrastructureError as exc:
        # One line: what failed and where, and (once the run exists) the command that finishes it.
        error(_masked(exc, spec) + _finish_hint(spec, run_id, on_interrupt))
        sys.exit(EXIT_INFRA)
    except Exception as exc:  # noqa: BLE001 - anything unexpected is an infrastructure failure
        error(f"{type(exc).__name__}: {_masked(exc, spec)}" + _finish_hint(spec, run_id, on_interrupt))
        sys.exit(EXIT_INFRA)


def _require_deployment(spec: EvalSpec) -> None:
    """The executor, the instance's storage and the canonical output can take the run
    (runner/deployment.py): else one line each, exit 2, before the instance is opened."""
    from evalh_pipeline.defs.instance_config import instance_home
    from evalh_pipeline.runner.deployment import deployment_problems

    problems = deployment_problems(spec, instance_home() / "dagster.yaml")
    if problems:
        error("\n".join(problems))
        sys.exit(EXIT_CONFIG)


def _print_no_answer(exc: Exception, spec: EvalSpec, run_id: str) -> NoReturn:
    """A run in which no system answered: its cause first, then where the traces are and how
    to finish it; exit 1 for a system that could not start (a config error), else 2."""
    from evalh_pipeline.runner.traces import START_ERROR

    error(_masked(exc, spec))
    shown = _run_argument(spec, run_id)
    err.line(f"the run failed: no system answered. Every trace is kept ({shown}; evalh inspect {shown} --failed "
             f"shows each error); once the cause is fixed, run the cells again: evalh retry-failed {shown}")
    sys.exit(EXIT_CONFIG if getattr(exc, "error_type", "") == START_ERROR else EXIT_INFRA)


@contextmanager
def _long_lived_objects() -> Iterator[None]:
    """Import the Dagster layer and open the instance with the cyclic garbage collector
    paused, then move every object alive at that point out of its reach (``gc.freeze``).

    Why: those objects (Dagster's, SQLAlchemy's and alembic's modules, classes and
    functions, ~200,000 tracked objects) live until the process exits, yet each full
    collection walked all of them again: three during these imports, one or two during the
    run and one at exit, ~0.6 s of CPU for a one-case run (gc.callbacks). Collection still
    runs for everything made after this, the run's own objects included; what is frozen is
    never freed before exit, which for these objects is when they would go anyway.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _finish_hint(spec: EvalSpec, run_id: str, on_interrupt: str) -> str:
    """``; what is done is kept. Finish it with: …`` for a run that exists, else ""."""
    return f"; what is done is kept. {on_interrupt}" if on_interrupt and _run_started(spec, run_id) else ""


def _run_started(spec: EvalSpec, run_id: str) -> bool:
    """Whether the run's directory exists (its work so far can be finished with --resume)."""
    from evalh_pipeline.store.run_dir import run_directory

    return run_directory(spec, run_id).exists()


def _print_publishing(spec: EvalSpec, run_dir: RunDirectory, since: datetime) -> None:
    """Where the run was published (output[] URLs) and which mirrors failed during this command."""
    from evalh_pipeline.outputs.journal import recorded_failures
    from evalh_pipeline.outputs.publishing import is_remote, run_url
    from evalh_pipeline.outputs.sync import failure_titles

    if spec.outputs and is_remote(spec.outputs[0]):
        # soft_wrap: a URL split over lines cannot be copied.
        say(f"published to: {run_url(spec.outputs[0], run_dir.run_id)}")
    failures = recorded_failures(run_dir, since)
    titles = failure_titles(spec) if failures else {}
    for failure in failures:
        if (title := titles.get(str(failure.get("target", "")))) is not None:
            warning(f"{title}: {failure['error']} (recorded in {run_dir.publish_log})")
            continue
        warning(f"mirror {failure['target']} not updated after {failure['stage']}: "
                f"{failure['error']} (recorded in {run_dir.publish_log})")


def _print_outcome(outcome: RunOutcome, spec: EvalSpec) -> None:
    broken: dict[str, str] = {}
    if any(v.cases_errored for v in outcome.summary.variants):
        from evalh_pipeline.runner.traces import start_errors

        broken = start_errors(outcome.run_dir.traces)
    # The cause first: a system that could not start is said before the figures it explains.
    for variant, message in broken.items():
        error(f"system {variant!r} could not start: {message}")
    _print_summary(outcome.summary, outcome.run_dir, spec.display_name, _run_argument(spec, outcome.run_dir.run_id))
    done = outcome.summary.completeness
    if done is not None and not done.complete:
        warning(done.describe())
    if outcome.run_dir.drift.exists():
        from evalh_pipeline.runner.drift import load_drift

        drift = load_drift(outcome.run_dir)
        if drift["baseline_run_id"]:
            comparison = drift.get("comparison") or {}
            only = sum(len(ids) for ids in (comparison.get("evaluator_only_regressions") or {}).values())
            say(f"drift vs promoted baseline {drift['baseline_run_id']}: {drift['regressions_count'] - only} "
                f"regression(s){f' (and {only} evaluator-config-only)' if only else ''}, "
                f"{drift['improvements_count']} improvement(s)")
            for change in comparison.get("evaluator_changes") or []:
                say(f"  evaluator config differs: {change['evaluator']}: judged with config {change['hash_a']} in "
                    f"the baseline, {change['hash_b']} in this run: its verdicts are not comparable")
            if drift.get("rejudge_baseline"):
                say(f"  re-judge the baseline with today's evaluators (no system call): {drift['rejudge_baseline']}")
        else:
            # The run id is known: print the command to paste, not a placeholder.
            say(f"drift: no promoted baseline (evalh promote {_run_argument(spec, outcome.run_dir.run_id)})")
    _print_rate_limits(outcome.run_dir)
    if outcome.failed_checks:
        # Why each failed, judged by the same functions as the checks (runner/gates.py).
        from evalh_pipeline.runner.gates import DRIFT, SUMMARY, RunFiles, judge_gates

        files = RunFiles(outcome.run_dir, outcome.summary)
        why = {j.gate.name: j.verdict.description for stage in (SUMMARY, DRIFT) for j in judge_gates(spec, files, stage)}
        for check in outcome.failed_checks:
            reason = why.get(check.rsplit(": ", 1)[-1])
            out.line(escape_control(check + (f": {reason}" if reason else "")), prefix="gate failed: ",
                     prefix_style="yellow")
    if broken:
        # As eval-harness: a system that cannot start is a config error, so CI sees a failure.
        sys.exit(EXIT_CONFIG)


def _print_rate_limits(run_dir: RunDirectory) -> None:
    """One line per limit that answered rate limits (rate_limits.jsonl); nothing when none did."""
    for record in rate_limit_records(run_dir):
        limited, requests = int(record.get("rate_limited") or 0), int(record.get("requests") or 0)
        if not limited:
            continue
        levels = record.get("levels") or [[0, 0]]
        say(f"rate limit {record.get('limit')} ({record.get('stage')}): {limited} of {requests} "
            f"request(s) answered with a rate limit ({limited / max(1, requests):.1%}); concurrency at the end "
            f"{levels[-1][1]} (run.rate_limits; {run_dir.rate_limits.name})")
        if record.get("gave_up"):
            warning(f"gave up on a rate limit: {record['gave_up']}")


def _run_location(spec: EvalSpec, run_id: str) -> str:
    """Where run ``run_id`` of ``spec`` is for a command on any machine: its URL when the eval
    publishes to one, else its folder's absolute path."""
    from evalh_pipeline.outputs.publishing import run_location

    return run_location(spec, run_id)


def _run_argument(spec: EvalSpec, run_id: str) -> str:
    """Run ``run_id`` of ``spec`` as a command that finishes or reads it takes it, on any machine:
    its URL when the eval publishes to one (a working copy is this machine's only), else its
    folder as :func:`_shown_path` shows it."""
    from evalh_pipeline.outputs.publishing import is_remote

    location = _run_location(spec, run_id)
    return shlex.quote(location) if is_remote(location) else _shown_path(Path(location))


def _shown_path(path: Path) -> str:
    """``path`` as a user would type it here: relative to the working directory when inside it, shell-quoted."""
    shown = Path(os.path.relpath(path)) if path.resolve().is_relative_to(Path.cwd().resolve()) else path
    return shlex.quote(shown.as_posix())


def _print_summary(summary: RunSummary, run_dir: RunDirectory, eval_name: str, argument: str | None = None) -> None:
    """The run's table, titled with the eval's name as eval.yaml gives it (``agent main``, not its key);
    ``argument``: the run as the commands it suggests take it (:func:`_run_argument`; default its folder)."""
    argument = argument or _shown_path(run_dir.path)
    from evalh_pipeline.queries.report import (
        calibration_line,
        corrected_delta_text,
        corrected_text,
        gate_and_test_line,
        rate_ci_text,
        reading,
    )

    table(["variant", "cases", "passed", "errored", "pass rate", "95% CI", "avg latency ms", "avg cost $"],
          [[v.name, str(v.cases_total), str(v.cases_passed),
            str(v.cases_errored) + (f" + {v.cases_not_judged} not judged" if v.cases_not_judged else ""),
            "–" if v.cases_not_judged and v.cases_not_judged == v.cases_total else f"{v.pass_rate:.1%}",  # none judged
            rate_ci_text(v.pass_rate_ci), f"{v.avg_latency_ms:.1f}",
            "–" if v.avg_cost_usd is None else f"{v.avg_cost_usd:.6f}"]
           for v in summary.variants],
          title=f"{escape_control(eval_name)} · run {summary.run_id}")
    if summary.comparison is not None:
        for d in summary.comparison.deltas:
            say(f"{d.variant} vs {summary.comparison.baseline}: pass rate {percentage_points(d.pass_rate_delta)}, "
                f"{len(d.regressions)} regression(s), {len(d.improvements)} improvement(s)")
            if d.significance is not None:
                say(f"  {reading(d.significance)}")
            if (both := gate_and_test_line(len(d.regressions), d.significance)) is not None:
                say(f"  {both}")
    for rollup in summary.by_evaluator:
        line = calibration_line(rollup)
        if line is None:
            continue
        say(f"judge {line}")
        for variant, figures in rollup.by_variant.items():
            if figures.pass_rate_corrected is not None:
                say(f"  {variant}: {rollup.evaluator} pass rate {figures.pass_rate:.1%}"
                    f"{corrected_text(figures.pass_rate_corrected)}"
                    f"{corrected_delta_text(figures.pass_rate_delta_corrected)}")
    if summary.not_judged is not None:
        # First, and apart from the evaluators that failed: no verdict on the system at all.
        cases = sum(v.cases_not_judged for v in summary.variants)
        warning(f"{summary.not_judged.describe()}; {cases} case(s) left out of the pass rates and comparisons. "
                f"Finish them with: evalh retry-failed {argument} --include-evaluator-failures "
                "(re-judges the saved traces, no system call)")
    errored = {r.evaluator: sum(v.errored - v.not_judged for v in r.by_variant.values()) for r in summary.by_evaluator}
    for evaluator, count in errored.items():
        if count:
            warning(f"{count} {evaluator} result(s) errored: the evaluator itself failed "
                    f"(evalh inspect {run_dir.path} --failed shows why)")
    say(f"run directory: {run_dir.path}")


@main.command("delete-run")
@click.argument("run_dir", type=_RunLocation())
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--eval", "partition_of", metavar="EVAL_NAME",
              help="Remove the partition RUN_DIR of EVAL_NAME whose run folder never came to exist "
                   "(a run refused before it wrote anything).")
def delete_run(run_dir: str, yes: bool, partition_of: str | None) -> None:
    """Delete RUN_DIR and its partition in the Dagster instance (so no partition points at deleted data).

    The eval's promoted baseline is refused: promote another run first. A partition without a
    run folder: `evalh delete-run RUN_ID --eval EVAL_NAME`. A run's URL (an eval publishing to
    s3://…) deletes its files there and this machine's copies of it."""
    from evalh_pipeline.store.baselines import current_baseline

    if "://" in run_dir:
        if partition_of is not None:
            error("--eval removes a partition that has no run folder; a run's URL is deleted without it")
            sys.exit(EXIT_CONFIG)
        _delete_published(run_dir, yes)
        return
    if partition_of is not None:
        _delete_folderless_partition(run_dir, partition_of, yes)
        return
    if not Path(run_dir).exists() and not (_runs_folder() / run_dir).exists():
        error(f"{run_dir} is not a run directory (no run.json); a partition whose run folder never came "
              f"to exist is removed with: evalh delete-run {run_dir} --eval EVAL_NAME")
        sys.exit(EXIT_INFRA)
    directory = _run_directory(run_dir)
    meta = directory.read_meta()
    eval_name = str(meta.get("eval_name") or "")
    baseline = current_baseline(directory.path.parent, eval_name) if eval_name else None
    if baseline is not None and baseline.run_id == directory.run_id:
        error(f"{directory.run_id} is the promoted baseline of {eval_name}: promote another run first")
        sys.exit(EXIT_CONFIG)
    if not yes and not click.confirm(f"delete {directory.path} and its Dagster partition?", err=True):
        sys.exit(EXIT_CONFIG)
    _delete(directory, eval_name, "evalh delete-run")


def _delete_folderless_partition(run_id: str, eval_name: str, yes: bool) -> None:
    """Remove the partition ``run_id`` of ``eval_name`` that has no run folder (nothing else:
    a run folder is deleted only with its partition, by the run's own eval name)."""
    problem = run_id_problem_of(run_id)
    if problem:
        error(problem)
        sys.exit(EXIT_CONFIG)
    if (_runs_folder() / run_id).exists() or Path(run_id).exists():
        error(f"{run_id} has a run folder: delete it with `evalh delete-run {run_id}` (without --eval)")
        sys.exit(EXIT_CONFIG)
    if not yes and not click.confirm(f"delete partition {run_id} of {eval_name}?", err=True):
        sys.exit(EXIT_CONFIG)
    from evalh_pipeline.defs import launch as dagster
    from evalh_pipeline.errors import InfrastructureError

    try:
        removed = dagster.delete_run_partition(dagster.local_instance(), eval_name, run_id)
    except InfrastructureError as exc:
        error(str(exc))
        sys.exit(EXIT_INFRA)
    if not removed:
        error(f"eval {eval_name!r} has no partition {run_id} in the Dagster instance")
        sys.exit(EXIT_CONFIG)
    say(f"removed partition {run_id} of {eval_name}")


def _delete(directory: RunDirectory, eval_name: str, holder: str) -> None:
    """Remove ``directory``'s partition, then the folder (never a baseline: the callers refuse it)."""
    import shutil

    with _holding(directory.path, holder):
        # The partition first: a folder whose deletion fails half-way is no longer offered as a run.
        _delete_partition(eval_name, directory.run_id)
        shutil.rmtree(directory.path)
    say(f"deleted {directory.path}")


def _delete_partition(eval_name: str, run_id: str) -> None:
    """Remove the partition ``run_id`` of ``eval_name`` (if it is one); failing, exit 2 with nothing deleted."""
    if eval_name and not run_id_problem_of(run_id):
        from evalh_pipeline.defs import launch as dagster
        from evalh_pipeline.errors import InfrastructureError

        try:
            removed = dagster.delete_run_partition(dagster.local_instance(), eval_name, run_id)
        except InfrastructureError as exc:
            error(f"{exc} (nothing more was deleted)")
            sys.exit(EXIT_INFRA)
        if removed:
            err.line(f"removed partition {run_id} of {eval_name}")


def _delete_published(url: str, yes: bool) -> None:
    """`delete-run URL`: the partition, the run's files at the URL, and this machine's copies of
    it (never the eval's baseline promoted at the URL)."""
    from evalh_pipeline.outputs.publishing import run_url
    from evalh_pipeline.outputs.runs_mirror import RunsMirror

    directory = _run_directory(url)  # a fresh copy: its run.json says whose run it is
    eval_name = str(directory.read_meta().get("eval_name") or "")
    output, run_id = url.rstrip("/").rsplit("/", 1)
    published = RunsMirror(output, _settings().cache)
    try:
        promoted = published.promoted(eval_name) if eval_name else None
    except Exception as exc:  # noqa: BLE001 - unreadable pointer or storage
        error(f"cannot read the promoted baseline of {eval_name!r} at {output}: {_storage_error(exc)}")
        sys.exit(EXIT_INFRA)
    if promoted is not None and promoted.run_id == run_id:
        error(f"{run_id} is the promoted baseline of {eval_name}: promote another run first")
        sys.exit(EXIT_CONFIG)
    if not yes and not click.confirm(f"delete {url} and its Dagster partition?", err=True):
        sys.exit(EXIT_CONFIG)
    _delete_partition(eval_name, run_id)
    try:
        published.delete_run(run_id)
    except Exception as exc:  # noqa: BLE001 - storage that refuses the deletion
        error(f"cannot delete {run_url(output, run_id)}: {_storage_error(exc)}")
        sys.exit(EXIT_INFRA)
    import shutil

    shutil.rmtree(directory.path, ignore_errors=True)
    say(f"deleted {url}")


@main.command()
@click.argument("eval_path", type=click.Path(exists=True, dir_okay=False))
@click.option("--keep", type=click.IntRange(min=0), required=True, help="How many of the newest runs to keep.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def prune(eval_path: str, keep: int, yes: bool) -> None:
    """Delete all but the KEEP newest runs of EVAL_PATH's eval and their Dagster partitions.

    Newest by the time recorded in run.json (then the run id). The promoted baseline is never
    deleted and does not count toward KEEP. An eval that publishes to a URL has its runs there
    pruned (and this machine's copies of them)."""
    from evalh_pipeline.store.baselines import current_baseline
    from evalh_pipeline.outputs.publishing import RunPublisher

    spec = _load(eval_path)
    if (canonical := RunPublisher.for_spec(spec).canonical) is not None:
        _prune_published(spec, canonical, keep, yes)
        return
    root = Path(spec.runs_root)
    if "://" in str(spec.runs_root) or not root.is_dir():
        say(f"no local runs of {spec.name} in {spec.runs_root}")
        return
    runs = []
    for folder in sorted(root.iterdir()):
        directory = RunDirectory(folder)
        if folder.is_symlink() or not folder.is_dir() or not directory.exists():
            continue
        meta = directory.read_meta() or {}
        if meta.get("eval_name") == spec.name:
            runs.append((str(meta.get("created_at") or ""), directory.run_id, directory))
    baseline = current_baseline(root, spec.name)
    runs = [r for r in runs if baseline is None or r[1] != baseline.run_id]
    runs.sort(reverse=True)
    doomed = [directory for _, _, directory in runs[keep:]]
    if not doomed:
        say(f"nothing to prune: {len(runs)} run(s) of {spec.name}, keeping {keep}")
        return
    if not yes and not click.confirm(f"delete {len(doomed)} run(s) of {spec.name} and their Dagster partitions?",
                                     err=True):
        sys.exit(EXIT_CONFIG)
    for directory in doomed:
        _delete(directory, spec.name, "evalh prune")
    say(f"pruned {len(doomed)} run(s) of {spec.name}; kept {min(keep, len(runs))}"
        + (f" and the baseline {baseline.run_id}" if baseline is not None else ""))


def _prune_published(spec: EvalSpec, output: str, keep: int, yes: bool) -> None:
    """`prune` of an eval whose runs live at the URL ``output``: as for a local runs folder, by
    the run.json of each run there and the baseline pointer there."""
    from evalh_pipeline.outputs.runs_mirror import RunsMirror

    published = RunsMirror(output, _settings().cache)
    try:
        metas = published.run_metas()
        baseline = published.promoted(spec.name)
    except Exception as exc:  # noqa: BLE001 - unreachable or unreadable storage
        error(f"cannot read the runs at {output}: {_storage_error(exc)}")
        sys.exit(EXIT_INFRA)
    runs = sorted(((str(meta.get("created_at") or ""), run_id) for run_id, meta in metas.items()
                   if meta.get("eval_name") == spec.name and (baseline is None or run_id != baseline.run_id)),
                  reverse=True)
    doomed = [run_id for _, run_id in runs[keep:]]
    if not doomed:
        say(f"nothing to prune: {len(runs)} run(s) of {spec.name} at {output}, keeping {keep}")
        return
    if not yes and not click.confirm(f"delete {len(doomed)} run(s) of {spec.name} at {output} and their Dagster "
                                     "partitions?", err=True):
        sys.exit(EXIT_CONFIG)
    for run_id in doomed:
        _delete_partition(spec.name, run_id)
        try:
            published.delete_run(run_id)
        except Exception as exc:  # noqa: BLE001 - storage that refuses the deletion
            error(f"cannot delete {published.url}/{run_id}: {_storage_error(exc)}")
            sys.exit(EXIT_INFRA)
        say(f"deleted {published.url}/{run_id}")
    say(f"pruned {len(doomed)} run(s) of {spec.name}; kept {min(keep, len(runs))}"
        + (f" and the baseline {baseline.run_id}" if baseline is not None else ""))


def run_id_problem_of(run_id: str) -> str:
    """Why ``run_id`` is no partition key ("" if it is one): such a run has no partition to remove."""
    from evalh_pipeline.defs.evals.names import run_id_problem

    return run_id_problem(run_id)
