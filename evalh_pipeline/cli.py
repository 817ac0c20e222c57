"""`evalh`: run and re-evaluate evals from a terminal or CI; compare and inspect runs.

Commands that produce data go through the Dagster assets and the local instance, so the
UI shows what the CLI did; Dagster is imported only by those commands. The read-only
commands (`compare`, `drift`, `inspect`) read run directories directly and never import it;
`compare` and `drift` import only click, DuckDB and the query modules (every other import
here is deferred to the command that needs it), so they start in a fraction of a second.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from typing import TYPE_CHECKING, Any

import click

from evalh_pipeline.store.run_dir import RunDirectory, new_run_id

from evalh_pipeline.terminal import err, error, escape_control, out, percentage_points, plural, say, table, warning

if TYPE_CHECKING:
    from evalh_pipeline.config import EvalSpec
    from evalh_pipeline.models import RunSummary

EXIT_OK, EXIT_CONFIG, EXIT_INFRA, EXIT_INTERRUPTED = 0, 1, 2, 130
# `run --fail-on-gate`: a gate failed (like `drift --exit-nonzero-on-regression`).
EXIT_GATE = 1


def _load(eval_path: str, strict: bool = False) -> EvalSpec:
    from evalh_pipeline.config import ConfigError, load_eval

    try:
        spec = load_eval(eval_path, strict=strict)
    except ConfigError as exc:
        error(f"invalid eval config\n{exc}")
        sys.exit(EXIT_CONFIG)
    for problem in spec.warnings:
        warning(str(problem))
    return spec


def _materialize(action, spec: EvalSpec, run_id: str, max_concurrency: int | None, *, on_interrupt: str = "",
                 engine_first: bool = False, reuse_from: str | None = None,
                 rejudge_all: bool = False):
    """Run ``action`` (a defs.launch materialization) and map its failures to exit codes.

    With ``engine_first`` the action is ``defs.overlap.run_overlapped``: it starts the run's
    cells before Dagster is imported, so Dagster is not imported here either.
    """
    from evalh_pipeline.config import ConfigError
    from evalh_pipeline.defs.run_options import InfrastructureError, RunOptions
    from evalh_pipeline.terminal import BarProgress, LineProgress, progress_bars

    def launch(runtime: RunOptions):
        if engine_first:
            return action(spec, run_id, runtime)
        from evalh_pipeline.defs.launch import local_instance

        return action(spec, run_id, instance=local_instance(), runtime=runtime)

    started = datetime.now(timezone.utc)
    try:
        # The assets use `spec` itself (launch hands it over), so a run named on the command
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
        if isinstance(getattr(outcome, "run_dir", None), RunDirectory):  # promote publishes no run files
            _print_publishing(spec, outcome.run_dir, started)
        return outcome
    except KeyboardInterrupt:
        err.line(f"interrupted. {on_interrupt}".rstrip())
        sys.exit(EXIT_INTERRUPTED)
    except ConfigError as exc:
        error(f"invalid eval input\n{_masked(exc, spec)}")
        sys.exit(EXIT_CONFIG)
    except InfrastructureError as exc:
        error(_masked(exc, spec))
        sys.exit(EXIT_INFRA)
    except Exception as exc:  # noqa: BLE001 - anything unexpected is an infrastructure failure
        error(f"{type(exc).__name__}: {_masked(exc, spec)}")
        sys.exit(EXIT_INFRA)


def _masked(exc: BaseException, spec: EvalSpec) -> str:
    """An error's text with the eval's secrets and URL credentials masked: it reaches the terminal and CI logs."""
    from evalh_pipeline.common.masking import mask_text

    return mask_text(str(exc), spec.secret_values)


def _print_publishing(spec: EvalSpec, run_dir: RunDirectory, since: datetime) -> None:
    """Where the run was published (output[] URLs) and which mirrors failed during this command."""
    from evalh_pipeline.store.publishing import is_remote, recorded_failures, run_url

    if spec.outputs and is_remote(spec.outputs[0]):
        # soft_wrap: a URL split over lines cannot be copied.
        say(f"published to: {run_url(spec.outputs[0], run_dir.run_id)}")
    for failure in recorded_failures(run_dir, since):
        if str(failure.get("target", "")).startswith("webhook:"):
            warning(f"webhook not posted: {failure['error']} (recorded in {run_dir.publish_log})")
            continue
        warning(f"mirror {failure['target']} not updated after {failure['stage']}: "
                f"{failure['error']} (recorded in {run_dir.publish_log})")


def _print_outcome(outcome) -> None:
    _print_summary(outcome.summary, outcome.run_dir)
    done = outcome.summary.completeness
    if done is not None and not done.complete:
        warning(done.describe())
    if outcome.run_dir.drift.exists():
        from evalh_pipeline.runner.drift import load_drift

        drift = load_drift(outcome.run_dir)
        if drift["baseline_run_id"]:
            say(f"drift vs promoted baseline {drift['baseline_run_id']}: {drift['regressions_count']} "
                f"regression(s), {drift['improvements_count']} improvement(s)")
        else:
            say("drift: no promoted baseline (evalh promote runs/<run_id>)")
    for check in outcome.failed_checks:
        out.line(escape_control(check), prefix="gate failed: ", prefix_style="yellow")
    if any(v.cases_errored for v in outcome.summary.variants):
        from evalh_pipeline.runner.traces import start_errors

        broken = start_errors(outcome.run_dir.traces)
        for variant, message in broken.items():
            error(f"system {variant!r} could not start: {message}")
        if broken:
            # As eval-harness: a system that cannot start is a config error, so CI sees a failure.
            sys.exit(EXIT_CONFIG)


def _print_summary(summary: RunSummary, run_dir: RunDirectory) -> None:
    table(["variant", "cases", "passed", "errored", "pass rate", "avg latency ms", "avg cost $"],
          [[v.name, str(v.cases_total), str(v.cases_passed), str(v.cases_errored), f"{v.pass_rate:.1%}",
            f"{v.avg_latency_ms:.1f}", "–" if v.avg_cost_usd is None else f"{v.avg_cost_usd:.6f}"]
           for v in summary.variants],
          title=f"run {summary.run_id}")
    if summary.comparison is not None:
        for d in summary.comparison.deltas:
            say(f"{d.variant} vs {summary.comparison.baseline}: pass rate {percentage_points(d.pass_rate_delta)}, "
                f"{len(d.regressions)} regression(s), {len(d.improvements)} improvement(s)")
            if d.significance is not None:
                say(f"  {d.significance.verdict}")
    errored = {r.evaluator: sum(v.errored for v in r.by_variant.values()) for r in summary.by_evaluator}
    for evaluator, count in errored.items():
        if count:
            warning(f"{count} {evaluator} result(s) errored: the evaluator itself failed "
                    f"(evalh inspect {run_dir.path} --failed shows why)")
    say(f"run directory: {run_dir.path}")


class _RunLocation(click.ParamType):
    """A run directory, the URL of a run published through ``output[]``, or a bare run id
    (looked up in --store, else in the runs folder: $EVALH_RUNS_DIR or ./runs)."""

    name = "run"

    def convert(self, value: Any, param: Any, ctx: Any) -> str:
        from evalh_pipeline.store.run_dir import RUN_ID_PATTERN

        if "://" in str(value):
            return str(value)
        if not Path(str(value)).exists() and RUN_ID_PATTERN.match(str(value)):
            return str(value)
        return click.Path(file_okay=False, exists=True).convert(value, param, ctx)


class _EvalhGroup(click.Group):
    """click's group with evalh's exit codes: a usage error (bad option, a folder where a
    file is expected) exits 1 like any other invalid input, not click's 2, which evalh
    reserves for infrastructure failures."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
        except click.UsageError as exc:
            exc.show()
            sys.exit(EXIT_CONFIG)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            err.line("interrupted.")
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(result if isinstance(result, int) else EXIT_OK)


@click.group(cls=_EvalhGroup)
@click.version_option(package_name="evalh-pipeline")
def main() -> None:
    """evalh: an evaluation harness for AI systems, orchestrated by Dagster."""


@main.command()
@click.argument("eval_path", type=click.Path())
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, exists=True),
              help="Finish a killed run: only cells without a trace are run.")
@click.option("--reuse", "reuse_dir", type=click.Path(file_okay=False, exists=True),
              help="Reuse the traces of this earlier run whose case, variant and fixture are unchanged: "
                   "only new or changed cells call the system.")
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
def run(eval_path: str, resume_dir: str | None, reuse_dir: str | None, max_concurrency: int | None, dry_run: bool,
        limit: int | None, filters: tuple[str, ...], fail_on_gate: bool, strict: bool) -> None:
    """Run EVAL_PATH (an eval.yaml): every case against every variant, then judge and summarize."""
    _require_eval_file(eval_path)
    spec = _select(_load(eval_path, strict), filters, limit)
    if dry_run:
        _print_plan(spec, resume_dir, max_concurrency)
        return
    from evalh_pipeline.defs.overlap import run_overlapped

    selecting = bool(filters) or limit is not None
    if resume_dir and reuse_dir:
        error("--resume finishes a run, --reuse starts one: give one of them")
        sys.exit(EXIT_CONFIG)
    reuse_from = None
    if reuse_dir:
        previous = RunDirectory(Path(reuse_dir).resolve())
        if not previous.exists():
            error(f"--reuse {reuse_dir}: not a run directory (no run.json)")
            sys.exit(EXIT_CONFIG)
        reuse_from = str(previous.path)
    if resume_dir:
        if selecting:
            error("--limit and --filter choose the cases of a new run; a resumed run keeps the cases it started with")
            sys.exit(EXIT_CONFIG)
        run_dir = RunDirectory(Path(resume_dir).resolve())
        meta = run_dir.read_meta() if run_dir.exists() else None
        if meta is None or meta.get("eval_name") != spec.name:
            error(f"{resume_dir} is not a run of eval {spec.name!r}")
            sys.exit(EXIT_CONFIG)
        run_id = run_dir.run_id
        spec = _located(spec, run_dir)
    else:
        run_id = new_run_id(spec.name)
    resume = f"Finish it with: evalh run {eval_path} --resume {Path(spec.runs_root) / run_id}"
    err.line(f"{'resuming' if resume_dir else 'starting'} run {run_id} in {Path(spec.runs_root).resolve() / run_id}")
    with _holding(Path(spec.runs_root) / run_id if resume_dir else None, "evalh run --resume"):
        outcome = _materialize(run_overlapped, spec, run_id, max_concurrency, on_interrupt=resume, engine_first=True,
                               reuse_from=reuse_from)
    _print_outcome(outcome)
    if reuse_from:
        _print_reuse(outcome, reuse_from)
    _print_ui_visibility(spec)
    if fail_on_gate and outcome.failed_checks:
        sys.exit(EXIT_GATE)


def _print_reuse(outcome, reuse_from: str) -> None:
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


def _require_eval_file(eval_path: str) -> None:
    """A folder given where the eval file belongs: say which file to give (exit 1, a usage error)."""
    folder = Path(eval_path)
    if not folder.is_dir():
        return
    candidates = sorted(p for p in folder.glob("*.y*ml") if p.suffix in (".yaml", ".yml"))
    hint = f"; eval files there: {', '.join(str(p) for p in candidates)}" if candidates else ""
    error(f"{eval_path} is a folder: give the eval's YAML file (evalh run path/to/eval.yaml){hint}")
    sys.exit(EXIT_CONFIG)


@contextmanager
def _holding(run_dir: Path | None, command: str):
    """Hold the run directory's writer lock for the command; refuse if another process has it."""
    from evalh_pipeline.store.locking import RunDirectoryBusy, hold_run_directory

    if run_dir is None:
        yield
        return
    try:
        lease = hold_run_directory(run_dir, command)
        lease.__enter__()
    except RunDirectoryBusy as exc:
        error(str(exc))
        sys.exit(EXIT_INFRA)
    try:
        yield
    finally:
        lease.__exit__(None, None, None)


def _select(spec: EvalSpec, filters: tuple[str, ...], limit: int | None) -> EvalSpec:
    """``spec`` narrowed by ``--filter`` / ``--limit`` (unchanged without them)."""
    from evalh_pipeline.config.dataset import parse_filter_args, with_selection

    try:
        rules = parse_filter_args(filters)
    except ValueError as exc:
        error(str(exc))
        sys.exit(EXIT_CONFIG)
    return with_selection(spec, rules, limit)


def _print_plan(spec: EvalSpec, resume_dir: str | None, max_concurrency: int | None) -> None:
    """`run --dry-run`: read every dataset row as a real run would; write nothing, no Dagster."""
    from evalh_pipeline.config import ConfigError
    from evalh_pipeline.config.dataset import select_cases

    run_id = RunDirectory(Path(resume_dir).resolve()).run_id if resume_dir else new_run_id(spec.name)
    try:
        cases = sum(1 for _ in select_cases(spec, run_id))
    except ConfigError as exc:
        error(f"invalid eval input\n{exc}")
        sys.exit(EXIT_CONFIG)
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
        f"evaluators: {', '.join(e.name for e in spec.config.evaluators) or '–'}",
        f"output folder: {Path(spec.runs_root).resolve()}"
        + (f" (working copy of {spec.outputs[0]})" if spec.outputs and "://" in spec.outputs[0] else "")
        + (f"; mirrors: {', '.join(spec.outputs[1:])}" if len(spec.outputs) > 1 else ""),
    ]
    if spec.stores:
        from evalh_pipeline.store.stores.sync import build_stores

        stores = build_stores(spec)
        lines.append("trace stores: " + ", ".join(
            store.label + (f" (namespace {', '.join(f'{k}={v}' for k, v in store.namespace.items())})"
                           if store.namespace else "") for store in stores))
    if resume_dir:
        lines.append(f"resume: {resume_dir} (keeps the cases it started with; only cells without a trace run)")
    for line in lines:
        say(line)


@main.command("re-evaluate")
@click.argument("run_dir", type=_RunLocation())
@click.option("--config", "eval_path", type=click.Path(dir_okay=False, exists=True),
              help="The eval.yaml whose evaluators to apply (default: the one the run was made from).")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Override run.max_concurrency.")
@click.option("--all", "rejudge_all", is_flag=True,
              help="Re-judge every result, not only those of evaluators whose config changed and of new traces.")
def re_evaluate(run_dir: str, eval_path: str | None, max_concurrency: int | None, rejudge_all: bool) -> None:
    """Re-judge the persisted traces of RUN_DIR with the current evaluators (never calls the system).

    Only results whose evaluator config changed (or whose trace is new) are judged again;
    the others are kept as they are. --all re-judges everything."""
    from evalh_pipeline.defs.overlap import reevaluate_overlapped

    if "://" in run_dir:
        error("re-evaluate works on a local run directory (or a run id in ./runs)")
        sys.exit(EXIT_CONFIG)
    if not Path(run_dir).exists() and eval_path is not None:
        # A bare run id with --config: the run lives in that eval's runs folder.
        run_dir = str(Path(_load(eval_path).runs_root) / run_dir)
    directory = _run_directory(run_dir)
    spec = _spec_for_run(directory, eval_path)
    err.line(f"re-evaluating run {directory.run_id} in {directory.path}")
    with _holding(directory.path, "evalh re-evaluate"):
        outcome = _materialize(reevaluate_overlapped, spec, directory.run_id, max_concurrency, engine_first=True,
                               rejudge_all=rejudge_all)
    _print_outcome(outcome)
    from evalh_pipeline.runner.evaluation import last_evaluation

    counts = last_evaluation(directory)
    if counts is not None:
        changed = ", ".join(counts["evaluators_rejudged"]) or "none"
        say(f"re-judged {counts['results']} result(s) (changed evaluators: {changed}; "
            f"{counts['traces_appended']} new trace(s)); kept {counts['results_kept']} unchanged")


@main.command("retry-failed")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--include-evaluator-failures", is_flag=True,
              help="Also retry cells where an evaluator errored (raised), not only cells whose system call errored.")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Override run.max_concurrency.")
def retry_failed(run_dir: str, include_evaluator_failures: bool, max_concurrency: int | None) -> None:
    """Run the failed cells of RUN_DIR again, replacing their traces and results."""
    from evalh_pipeline.defs.launch import materialize_run
    from evalh_pipeline.runner.retry import prepare_retry

    directory = _run_directory(run_dir)
    spec = _spec_for_run(directory, None)
    with _holding(directory.path, "evalh retry-failed"):
        retried = prepare_retry(directory, include_evaluator_failures=include_evaluator_failures)
        say(f"retrying {plural(retried, 'failed cell')} of {directory.run_id}")
        resume = f"Finish it with: evalh run {spec.path} --resume {directory.path}"
        outcome = _materialize(materialize_run, spec, directory.run_id, max_concurrency, on_interrupt=resume)
    _print_outcome(outcome)
    say(f"retried {plural(retried, 'cell')}")


def _store_options(command):
    """``--store URL`` and ``--namespace KEY=VALUE``: read runs by id from a trace store."""
    command = click.option("--namespace", "namespace", multiple=True, metavar="KEY=VALUE",
                           help="With --store: only runs filed under this namespace (repeat for several keys).")(command)
    return click.option("--store", "store", metavar="URL",
                        help="Read runs by id from a trace store: sqlite:///runs.db or postgresql://…")(command)


def _namespace(pairs: tuple[str, ...]) -> dict[str, str]:
    from evalh_pipeline.store.stores.base import parse_namespace

    try:
        return parse_namespace(pairs)
    except ValueError as exc:
        error(f"{exc}")
        sys.exit(EXIT_CONFIG)


def _runs_folder() -> Path:
    import os

    return Path(os.environ.get("EVALH_RUNS_DIR") or "runs").resolve()


def _run_directory(path: str, store: str | None = None, namespace: tuple[str, ...] = ()) -> RunDirectory:
    if store is not None:
        from evalh_pipeline.store.stores.reading import fetch_from_store

        try:
            path = str(fetch_from_store(store, path, _namespace(namespace)))
        except (LookupError, ValueError) as exc:
            error(f"{str(exc).strip(chr(39))}")
            sys.exit(EXIT_INFRA)
        except Exception as exc:  # noqa: BLE001 - unreachable or unreadable store
            error(f"cannot read run {path} from {_safe_store(store)}: "
                      f"{type(exc).__name__}: {exc}")
            sys.exit(EXIT_INFRA)
    elif namespace:
        error("--namespace filters the runs of a --store")
        sys.exit(EXIT_CONFIG)
    elif "://" not in path and not Path(path).exists():
        path = str(_runs_folder() / path)  # a bare run id: the runs folder of the working directory
    if "://" in path:
        # Only the read-only commands take URLs: they read a fresh local copy.
        from evalh_pipeline.store.publishing import fetch_run

        try:
            path = str(fetch_run(path))
        except Exception as exc:  # noqa: BLE001 - missing, unreachable or unreadable
            error(f"cannot fetch {path}: {type(exc).__name__}: {exc}")
            sys.exit(EXIT_INFRA)
    directory = RunDirectory(Path(path).resolve())
    if not directory.exists():
        error(f"{path} is not a run directory (no run.json)")
        sys.exit(EXIT_INFRA)
    return directory


def _safe_store(url: str) -> str:
    from evalh_pipeline.store.stores.postgres import redact_dsn

    return redact_dsn(url)


def _num(value: float | None, fmt: str, signed: bool = False) -> str:
    if value is None:
        return "–"
    return format(value, ("+" if signed else "") + fmt)


@main.command()
@click.argument("run_a", type=_RunLocation())
@click.argument("run_b", type=_RunLocation())
@click.option("--exit-nonzero-on-regression", is_flag=True,
              help="Exit 1 when a case that passed in RUN_A does not pass in RUN_B.")
@click.option("--significance", "alpha", type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
              metavar="ALPHA",
              help="With --exit-nonzero-on-regression: exit 1 only when a variant's regression is significant "
                   "(McNemar's exact test, p < ALPHA, e.g. 0.05), not on any regressed case.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@_store_options
def compare(run_a: str, run_b: str, exit_nonzero_on_regression: bool, alpha: float | None, as_json: bool,
            store: str | None, namespace: tuple[str, ...]) -> None:
    """Compare RUN_B with RUN_A (the baseline): flips per case and deltas per variant (read-only)."""
    from evalh_pipeline.queries.compare import compare_runs

    a, b = _run_directory(run_a, store, namespace), _run_directory(run_b, store, namespace)
    _report_comparison(lambda: compare_runs(a, b), "baseline", exit_nonzero_on_regression, as_json, (a, b), alpha)


@main.command()
@click.argument("run_dir", type=_RunLocation())
@click.option("--baseline", "baseline_dir", type=_RunLocation(),
              help="Compare with this run instead of the eval's promoted baseline.")
@click.option("--exit-nonzero-on-regression", is_flag=True,
              help="Exit 1 when a case that passed in the baseline does not pass in RUN_DIR, or RUN_DIR "
                   "has no cells (the CI gate).")
@click.option("--significance", "alpha", type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
              metavar="ALPHA",
              help="With --exit-nonzero-on-regression: exit 1 only when a variant's regression is significant "
                   "(McNemar's exact test, p < ALPHA, e.g. 0.05), not on any regressed case.")
@click.option("--json", "as_json", is_flag=True, help="Print the drift report as JSON.")
@_store_options
def drift(run_dir: str, baseline_dir: str | None, exit_nonzero_on_regression: bool, alpha: float | None,
          as_json: bool, store: str | None, namespace: tuple[str, ...]) -> None:
    """Compare RUN_DIR with its eval's promoted baseline run (read-only)."""
    from evalh_pipeline.queries.drift import drift_report
    from evalh_pipeline.store.baselines import current_baseline

    current = _run_directory(run_dir, store, namespace)
    if baseline_dir is None and store is not None:
        baseline_dir = _store_baseline(store, namespace, current.read_meta().get("eval_name"))
    if baseline_dir is None:
        eval_name = current.read_meta()["eval_name"]
        promoted = current_baseline(current.path.parent, eval_name)
        if promoted is None:
            error(f"eval {eval_name!r} has no promoted baseline under "
                  f"{current.path.parent}: run `evalh promote <run_dir>` first, or pass --baseline")
            sys.exit(EXIT_INFRA)
        baseline_dir = str(promoted.locate(current.path.parent))
    baseline = _run_directory(baseline_dir, store, namespace)
    _report_comparison(lambda: drift_report(current, baseline), "promoted baseline",
                       exit_nonzero_on_regression, as_json, (baseline, current), alpha)


def _store_baseline(store: str, namespace: tuple[str, ...], eval_name: str | None) -> str:
    """The run id the store says is the promoted baseline of ``eval_name`` in ``namespace``."""
    from evalh_pipeline.store.stores.reading import store_from_url

    try:
        reader = store_from_url(store)
        try:
            run_id = reader.current_baseline(eval_name or "", _namespace(namespace))
        finally:
            reader.close()
    except Exception as exc:  # noqa: BLE001 - unreachable or unreadable store
        error(f"cannot read {_safe_store(store)}: {type(exc).__name__}: {exc}")
        sys.exit(EXIT_INFRA)
    if run_id is None:
        error(f"eval {eval_name!r} has no promoted baseline in {_safe_store(store)}"
                  f"{' (' + ', '.join(namespace) + ')' if namespace else ''}: run `evalh promote <run_id> --store …` "
                  "first, or pass --baseline")
        sys.exit(EXIT_INFRA)
    return run_id


def _report_comparison(build, baseline_label: str, exit_nonzero_on_regression: bool, as_json: bool,
                       runs: tuple[RunDirectory, RunDirectory] | None = None, alpha: float | None = None) -> None:
    """Print a RunComparison as a table (or JSON) and apply the regression gate (any regressed
    case, or with ``alpha`` a significant regression).

    Plain text, not rich: this is the whole output of `compare` and `drift`, and rich would
    double their start-up time. Names from the runs are escaped all the same.
    """
    from evalh_pipeline.queries.report import MAX_LISTED_CASES, text_table

    try:
        report = build()
    except Exception as exc:  # noqa: BLE001 - unreadable run files
        error(f"{type(exc).__name__}: {exc}")
        sys.exit(EXIT_INFRA)
    evals = [(run.read_meta() or {}).get("eval_name") for run in runs] if runs else []
    if len(set(evals)) > 1:
        warning(f"the runs are of different evals (A: {evals[0]}, B: {evals[1]}): "
                "only variants with the same name are compared")
    if report.run_b_empty:
        if exit_nonzero_on_regression:
            error(f"{report.run_b} has no cells (no case was selected): an empty run fails the gate")
            sys.exit(1)
        warning(f"{report.run_b} has no cells (no case was selected): nothing was compared")
    elif not report.variants:
        only_a = ", ".join(report.variants_only_in_a) or "none"
        only_b = ", ".join(report.variants_only_in_b) or "none"
        error(f"nothing to compare: no variant is in both runs (variants of A: {only_a}; of B: {only_b})")
        sys.exit(EXIT_CONFIG)
    if as_json:
        click.echo(report.to_json())
    else:
        lines = [f"{report.run_b} vs {report.run_a} ({baseline_label})", ""]
        lines += text_table(
            ["variant", "pass rate A → B", "Δ pass rate", "Δ latency ms", "Δ cost $",
             "Δ tokens in", "Δ tokens out", "regressions", "improvements"],
            [[v.variant, f"{v.a.pass_rate:.1%} → {v.b.pass_rate:.1%}", percentage_points(v.pass_rate_delta),
              _num(v.avg_latency_delta_ms, ".1f", True), _num(v.avg_cost_delta_usd, ".6f", True),
              _num(v.avg_tokens_input_delta, ".1f", True), _num(v.avg_tokens_output_delta, ".1f", True),
              str(v.regressions), str(v.improvements)] for v in report.variants],
        )
        lines.append("")
        for label, names in (("only in A", report.variants_only_in_a), ("only in B", report.variants_only_in_b)):
            if names:
                lines.append(f"variants {label} (not compared): {', '.join(names)}")
        for v in report.variants:
            if v.cases_only_in_a or v.cases_only_in_b:
                lines.append(f"{v.variant}: {v.cases_only_in_a} case(s) only in A, {v.cases_only_in_b} only in B "
                             "(not compared)")
        for d in report.comparison.deltas:
            if d.regressions:
                shown = ", ".join(d.regressions[:MAX_LISTED_CASES])
                more = f" … and {len(d.regressions) - MAX_LISTED_CASES} more" if len(d.regressions) > MAX_LISTED_CASES else ""
                lines.append(f"regressions in {d.variant} ({len(d.regressions)}): {shown}{more}")
        lines.append(f"{report.comparison.regressions_count} regression(s), "
                     f"{report.comparison.improvements_count} improvement(s)")
        lines += [f"{d.variant}: {d.significance.verdict}" for d in report.comparison.deltas if d.significance]
        click.echo(escape_control("\n".join(lines)))
    if exit_nonzero_on_regression:
        failed = report.has_significant_regression(alpha) if alpha is not None else report.has_regressions
        if failed:
            sys.exit(1)


@main.command()
@click.argument("run_dir", type=_RunLocation())
@_store_options
def promote(run_dir: str, store: str | None, namespace: tuple[str, ...]) -> None:
    """Make RUN_DIR its eval's baseline for `evalh drift` (the previous one is kept in history).

    With --store, RUN_DIR is a run id in that store, and the store records the baseline for
    the namespace (what `evalh drift RUN --store …` compares with).

    The pointer is written here, at once (and told to the eval's trace stores); the
    `baseline` materialization is recorded in the Dagster instance by a background process
    (defs/record_promotion.py), so the command does not wait for Dagster to start.
    """
    if store is not None:
        _promote_in_store(run_dir, store, namespace)
        return
    import os
    import subprocess

    from evalh_pipeline.store.baselines import baseline_folder, current_baseline, promote as write_pointer
    from evalh_pipeline.store.stores.sync import record_baseline

    directory = _run_directory(run_dir)
    if directory.is_eval_harness_run():
        error(f"{run_dir} was written by eval-harness: evalh reads it (inspect, compare, drift --baseline) "
              "but promotes only its own runs; eval-harness's baselines/<eval> link is read by `evalh drift` "
              "until you promote an evalh run")
        sys.exit(EXIT_CONFIG)
    spec = _spec_for_run(directory, None)
    runs_root = Path(spec.runs_root)
    previous = current_baseline(runs_root, spec.name)
    try:
        promoted = write_pointer(directory)
    except (ValueError, OSError) as exc:
        error(str(exc))
        sys.exit(EXIT_CONFIG)
    was = f" (was {previous.run_id})" if previous else ""
    say(f"baseline of {spec.name} is now {promoted.run_id}{was}")
    for failure in record_baseline(spec, promoted.run_id, promoted.promoted_at.isoformat()):
        warning(f"store {failure.target} did not record baseline {promoted.run_id}: {failure.error}")
    log = baseline_folder(runs_root, spec.name) / "dagster-record.log"
    with log.open("a") as sink:
        subprocess.Popen(
            [sys.executable, "-m", "evalh_pipeline.defs.record_promotion", str(spec.path), str(directory.path),
             previous.run_id if previous else ""],
            stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, cwd=os.getcwd(), start_new_session=True,
        )
    err.line(f"recording it in the Dagster instance in the background (log: {log})")


def _promote_in_store(run_id: str, store: str, namespace: tuple[str, ...]) -> None:
    from evalh_pipeline.store.stores.reading import store_from_url

    wanted = _namespace(namespace)
    try:
        writer = store_from_url(store)
        try:
            found = {r.run_id: r for r in writer.list_runs(wanted)}
            if run_id not in found:
                error(f"no run {run_id!r} in {_safe_store(store)}"
                          f"{' (' + ', '.join(namespace) + ')' if namespace else ''}")
                sys.exit(EXIT_INFRA)
            run = found[run_id]
            # The baseline is filed under the run's own namespace, where `drift --namespace` looks.
            writer.config.run_namespace = dict(run.namespace or {})
            previous = writer.current_baseline(run.eval_name or "", run.namespace)
            writer.record_baseline(run.eval_name or "", run_id, datetime.now(timezone.utc).isoformat())
        finally:
            writer.close()
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - unreachable or unwritable store
        error(f"cannot promote in {_safe_store(store)}: {type(exc).__name__}: {exc}")
        sys.exit(EXIT_INFRA)
    was = f" (was {previous})" if previous and previous != run_id else ""
    say(f"baseline of {run.eval_name} in {_safe_store(store)} is now {run_id}{was}")


@main.command("runs")
@click.option("--store", "store", metavar="URL", required=True,
              help="The trace store: sqlite:///runs.db or postgresql://…")
@click.option("--namespace", "namespace", multiple=True, metavar="KEY=VALUE",
              help="Only runs filed under this namespace (repeat for several keys).")
@click.option("--eval", "eval_name", help="Only runs of this eval.")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
def runs(store: str, namespace: tuple[str, ...], eval_name: str | None, as_json: bool) -> None:
    """List the runs in a trace store (read-only)."""
    from evalh_pipeline.store.stores.reading import store_from_url

    try:
        reader = store_from_url(store)
        try:
            found = reader.list_runs(_namespace(namespace), eval_name)
        finally:
            reader.close()
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - unreachable or unreadable store
        error(f"cannot read {_safe_store(store)}: {type(exc).__name__}: {exc}")
        sys.exit(EXIT_INFRA)
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


def _json_text(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


@main.command()
@click.argument("run_dir", type=_RunLocation())
@click.option("--case", "case_id", help="Only this case id.")
@click.option("--variant", help="Only this variant.")
@click.option("--failed", is_flag=True, help="Only cells that did not pass (pass_criteria) or errored.")
@click.option("--thinking", is_flag=True, help="Also show the system's thinking.")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True,
              help="Show at most N cells (0: all).")
@_store_options
def inspect(run_dir: str, case_id: str | None, variant: str | None, failed: bool, thinking: bool, limit: int,
            store: str | None, namespace: tuple[str, ...]) -> None:
    """Show cells of RUN_DIR: input, answer, tool calls, error and every evaluator's verdict (read-only)."""
    from evalh_pipeline.queries.inspect import inspect_run

    directory = _run_directory(run_dir, store, namespace)
    try:
        found = inspect_run(directory, case_id=case_id, variant=variant, failed=failed, limit=limit or None)
    except Exception as exc:  # noqa: BLE001 - unreadable run files
        error(f"{type(exc).__name__}: {exc}")
        sys.exit(EXIT_INFRA)

    for cell in found.cells:
        text = _cell_text(cell, thinking)
        if out.is_terminal:
            out.rich(text)
        else:
            out.line(text.plain)
    shown = len(found.cells)
    rest = f" (showing {shown}; use --limit)" if shown < found.matched else ""
    say(f"{plural(found.matched, 'matching cell')} in {found.run_id}{rest}")


# Lines of unified diff shown per cell; the whole diff stays in the artifact's diff.txt.
MAX_DIFF_LINES = 80


def _append_file_changes(text, artifact: dict) -> None:
    """The cell's filesystem diff: changed paths, then the text diffs up to MAX_DIFF_LINES."""
    diff = artifact.get("diff") or {}
    changes = [("+", p) for p in diff.get("added", [])] + [("~", p) for p in diff.get("modified", [])] + [
        ("-", p) for p in diff.get("removed", [])]
    text.append("files:" + (" " if changes else " unchanged") + "\n", style="bold")
    for mark, path in changes:
        text.append(f"  {mark} {escape_control(path)}\n", style={"+": "green", "-": "red"}.get(mark, "yellow"))
    lines = [line for body in (diff.get("text_diffs") or {}).values() for line in body.splitlines()]
    for line in lines[:MAX_DIFF_LINES]:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        text.append(f"  {escape_control(line)}\n", style=style)
    if len(lines) > MAX_DIFF_LINES:
        where = escape_control(artifact.get("artifacts_path") or "the artifacts folder")
        text.append(f"  … {len(lines) - MAX_DIFF_LINES} more diff line(s) in {where}/diff.txt\n")


def _cell_text(cell, thinking: bool):
    """One inspected cell as a single rich Text.

    Everything in it except the labels came from the dataset or the system under test:
    it is escaped (no control sequence reaches the terminal) and never read as markup.
    """
    from rich.text import Text

    trace = cell.trace
    error_ = trace.get("error")
    output = trace.get("output") or {}
    status = "ERROR" if error_ else ("PASS" if cell.passed else "FAIL")
    sample = f" · sample {cell.sample}" if cell.sample else ""
    text = Text()
    text.append(f"── {escape_control(cell.case_id)} · {escape_control(cell.variant_name)}{sample} · {status} ──\n",
                style="bold green" if status == "PASS" else "bold red")

    def field(label: str, value: str) -> None:
        text.append(f"{label}:" + (" " if value else ""), style="bold")
        text.append(escape_control(value) + "\n")

    field("input", _json_text(trace.get("input", {})))
    field("answer", str(output["final_answer"]) if output.get("final_answer") is not None else "–")
    if output.get("structured") is not None:
        field("structured", _json_text(output["structured"]))
    calls = trace.get("tool_calls") or []
    field("tool calls", "" if calls else "none")
    for call in calls:
        args = json.dumps(call.get("arguments", {}), ensure_ascii=False, default=str)
        text.append(escape_control(f"  {call.get('name')}({args})") + "\n")
    if error_:
        field("error", f"{error_.get('type')}: {error_.get('message')}")
    if thinking:
        field("thinking", output.get("thinking") or "–")
    if cell.artifact is not None:
        _append_file_changes(text, cell.artifact)
    if not cell.results:
        field("evaluators", "no results")
    for r in sorted(cell.results, key=lambda r: r.get("evaluator", "")):
        ok = bool(r.get("passed")) and not r.get("error")
        reason = r.get("reason") or ""
        if r.get("error"):
            reason = f"{reason} [error {r['error'].get('type')}: {r['error'].get('message')}]".strip()
        text.append("  ✓ " if ok else "  ✗ ", style="green" if ok else "red")
        text.append(escape_control(f"{r.get('evaluator')}: {reason}") + "\n")
    text.rstrip()
    return text


def _spec_for_run(directory: RunDirectory, eval_path: str | None) -> EvalSpec:
    """The eval a run was made from (or ``eval_path``), pointed at the folder the run is in."""
    try:
        meta = directory.read_meta()
    except FileNotFoundError as exc:
        error(str(exc))
        sys.exit(EXIT_CONFIG)
    return _located(_load(eval_path or meta["config_path"]), directory)


def _located(spec: EvalSpec, directory: RunDirectory) -> EvalSpec:
    """``spec`` pointed at the folder ``directory`` is in: a run named on the command line is
    worked on where it is, even outside the eval's output folder."""
    from dataclasses import replace

    if Path(spec.runs_root).resolve() != directory.path.parent:
        spec = replace(spec, runs_root=str(directory.path.parent))
    return spec


if __name__ == "__main__":
    main()
