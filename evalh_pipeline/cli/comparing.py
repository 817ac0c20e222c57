"""`evalh compare`, `drift` and `promote`: compare two runs, a run with its promoted baseline,
and promote a run to baseline.

`compare` and `drift` are read-only and start fast: nothing here imports more than click and
the query modules at module level."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import click

from evalh_pipeline.cli.group import EXIT_CONFIG, EXIT_INFRA, _RunLocation, _store_options, main
from evalh_pipeline.cli.shared import _namespace, _opened_store, _run_directory, _safe_store, _settings, _spec_for_run, _storage_error
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.terminal import error, escape_control, percentage_points, say, warning

if TYPE_CHECKING:
    from evalh_pipeline.queries.compare import RunComparison


@main.command()
@click.argument("run_a", type=_RunLocation())
@click.argument("run_b", type=_RunLocation())
@click.option("--exit-nonzero-on-regression", is_flag=True,
              help="Exit 1 when a case that passed in RUN_A does not pass in RUN_B.")
@click.option("--significance", "alpha", type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
              metavar="ALPHA",
              help="With --exit-nonzero-on-regression: exit 1 only when a variant's regression is significant "
                   "(McNemar's test, Holm-adjusted p < ALPHA over the variants, e.g. 0.05), not on any "
                   "regressed case.")
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
                   "(McNemar's test, Holm-adjusted p < ALPHA over the variants, e.g. 0.05), not on any "
                   "regressed case.")
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
    if baseline_dir is None and "://" in run_dir:
        baseline_dir = _published_baseline(run_dir, str(current.read_meta().get("eval_name") or ""))
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


def _published_baseline(url: str, eval_name: str) -> str:
    """The URL of the run promoted as ``eval_name``'s baseline beside the published run at
    ``url`` (the pointer `evalh promote` puts at ``<output URL>/baselines/<eval>/``)."""
    from evalh_pipeline.outputs.publishing import run_url
    from evalh_pipeline.outputs.runs_mirror import RunsMirror

    output = url.rstrip("/").rsplit("/", 1)[0]
    try:
        promoted = RunsMirror(output, _settings().cache).promoted(eval_name)
    except Exception as exc:  # noqa: BLE001 - unreachable storage or a broken pointer
        error(f"cannot read the promoted baseline of {eval_name!r} at {_safe_store(output)}: {_storage_error(exc)}")
        sys.exit(EXIT_INFRA)
    if promoted is None:
        error(f"eval {eval_name!r} has no promoted baseline under {_safe_store(output)}: run "
              f"`evalh promote <run URL>` first, or pass --baseline")
        sys.exit(EXIT_INFRA)
    return run_url(output, promoted.run_id)


def _store_baseline(store: str, namespace: tuple[str, ...], eval_name: str | None) -> str:
    """The run id the store says is the promoted baseline of ``eval_name`` in ``namespace``."""
    with _opened_store(store, "read") as reader:
        run_id = reader.current_baseline(eval_name or "", _namespace(namespace))
    if run_id is None:
        error(f"eval {eval_name!r} has no promoted baseline in {_safe_store(store)}"
                  f"{' (' + ', '.join(namespace) + ')' if namespace else ''}: run `evalh promote <run_id> --store …` "
                  "first, or pass --baseline")
        sys.exit(EXIT_INFRA)
    return run_id


def _report_comparison(build: Callable[[], RunComparison], baseline_label: str, exit_nonzero_on_regression: bool, as_json: bool,
                       runs: tuple[RunDirectory, RunDirectory] | None = None, alpha: float | None = None) -> None:
    """Print a RunComparison as a table (or JSON) and apply the regression gate (any regressed
    case, or with ``alpha`` a significant regression).

    Plain text, not rich: this is the whole output of `compare` and `drift`, and rich would
    double their start-up time. Names from the runs are escaped all the same.
    """
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
        click.echo(escape_control("\n".join(_comparison_lines(report, runs, baseline_label))))
    if exit_nonzero_on_regression:
        failed = report.has_significant_regression(alpha) if alpha is not None else report.has_regressions
        not_judged = sum(v.cases_not_judged for v in report.variants)
        if not_judged:
            # Not a regression, but not shown to be none either: the gate cannot pass.
            error(f"{not_judged} case(s) could not be judged, so the gate cannot pass: judge them again with "
                  "`evalh re-evaluate <run>` (no system call)")
        if failed or not_judged:
            sys.exit(1)


def _comparison_lines(report: RunComparison, runs: tuple[RunDirectory, RunDirectory] | None, baseline_label: str) -> list[str]:
    """The text of a RunComparison: the table, the cases left out, the regressions and the
    readings of each delta."""
    from evalh_pipeline.queries.report import gate_and_test_line, rate_ci_text, reading, text_table

    lines = [f"{report.run_b} vs {report.run_a} ({baseline_label})", ""]
    lines += text_table(
        ["variant", "pass rate A → B", "95% CI of B", "Δ pass rate", "Δ latency ms", "Δ cost $",
         "Δ tokens in", "Δ tokens out", "regressions", "improvements"],
        [[v.variant, f"{v.a.pass_rate:.1%} → {v.b.pass_rate:.1%}", rate_ci_text(v.b.pass_rate_ci),
          percentage_points(v.pass_rate_delta),
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
    for v in report.variants:
        if v.cases_not_judged:
            lines.append(f"{v.variant}: {v.cases_not_judged} case(s) could not be judged in A or B (an evaluator's "
                         "judge gave no verdict): not compared; judge them again with "
                         "`evalh re-evaluate <run>` (no system call)")
    for d in report.comparison.deltas:
        evaluator_only = report.evaluator_only_regressions.get(d.variant, [])
        system = [c for c in d.regressions if c not in set(evaluator_only)]
        if system:
            lines.append(f"regressions in {d.variant} ({len(system)}): {_listed(system)}")
        if evaluator_only:
            lines.append(f"evaluator-config-only regressions in {d.variant} ({len(evaluator_only)}; same answers, "
                         f"only an evaluator's config changed: not a regression of the system): "
                         f"{_listed(evaluator_only)}")
    only = sum(len(c) for c in report.evaluator_only_regressions.values())
    lines.append(f"{report.system_regressions_count} regression(s)"
                 + (f" (and {only} evaluator-config-only)" if only else "")
                 + f", {report.comparison.improvements_count} improvement(s)")
    for d in report.comparison.deltas:
        if d.significance:
            lines.append(f"{d.variant}: {reading(d.significance)}")
        system_count = len(d.regressions) - len(report.evaluator_only_regressions.get(d.variant, []))
        if (both := gate_and_test_line(system_count, d.significance)) is not None:
            lines.append(f"{d.variant}: {both}")
    lines += _evaluator_config_lines(report, runs, baseline_label)
    return lines


def _listed(cases: list[str]) -> str:
    from evalh_pipeline.queries.report import MAX_LISTED_CASES

    more = f" … and {len(cases) - MAX_LISTED_CASES} more" if len(cases) > MAX_LISTED_CASES else ""
    return ", ".join(cases[:MAX_LISTED_CASES]) + more


def _evaluator_config_lines(report: RunComparison, runs: tuple[RunDirectory, RunDirectory] | None, baseline_label: str) -> list[str]:
    """One line per evaluator judged with different configs on the two sides, and the command
    that re-judges A (the baseline) with B's evaluators (no system call)."""
    if not report.evaluator_changes:
        return []
    lines = [f"evaluator config differs: {change.describe('A', 'B')}: its verdicts in the two runs are not "
             "comparable" for change in report.evaluator_changes]
    if runs is not None:
        from evalh_pipeline.cli.running import _shown_path
        from evalh_pipeline.queries.evaluator_configs import rejudge_command

        baseline, current = runs
        lines.append(f"re-judge the {baseline_label} {baseline.run_id} with today's evaluators (no system call): "
                     f"{rejudge_command(baseline, current, _shown_path(baseline.path))}")
    return lines


def _num(value: float | None, fmt: str, signed: bool = False) -> str:
    if value is None:
        return "–"
    return format(value, ("+" if signed else "") + fmt)


@main.command()
@click.argument("run_dir", type=_RunLocation())
@_store_options
def promote(run_dir: str, store: str | None, namespace: tuple[str, ...]) -> None:
    """Make RUN_DIR its eval's baseline for `evalh drift` (the previous one is kept in history).

    With --store, RUN_DIR is a run id in that store, and the store records the baseline for
    the namespace (what `evalh drift RUN --store …` compares with).

    It is one Dagster run of the eval's promote job on the run's partition, which writes the
    pointer (and tells the eval's trace stores).
    """
    if store is not None:
        _promote_in_store(run_dir, store, namespace)
        return
    from evalh_pipeline.cli.running import _materialize, _require_run_id

    directory = _run_directory(run_dir, writing=True)
    if directory.is_eval_harness_run():
        error(f"{run_dir} was written by eval-harness: evalh reads it (inspect, compare, drift --baseline) "
              "but promotes only its own runs; eval-harness's baselines/<eval> link is read by `evalh drift` "
              "until you promote an evalh run")
        sys.exit(EXIT_CONFIG)
    _require_run_id(directory.run_id)
    spec = _spec_for_run(directory, None)
    promotion = _materialize("promote", spec, directory.run_id, None)
    was = f" (was {promotion.previous_run_id})" if promotion.previous_run_id else ""
    say(f"baseline of {spec.name} is now {promotion.run_id}{was}")


def _promote_in_store(run_id: str, store: str, namespace: tuple[str, ...]) -> None:
    wanted = _namespace(namespace)
    with _opened_store(store, "promote in") as writer:
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
    was = f" (was {previous})" if previous and previous != run_id else ""
    say(f"baseline of {run.eval_name} in {_safe_store(store)} is now {run_id}{was}")
