"""One eval.yaml -> one asset group ``cases -> traces -> results -> summary -> drift``.

The assets are thin: each loads the eval, calls one engine stage on the run directory and
reports metadata. Data lives in the run directory, not in an IO manager.
"""

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from evalh_pipeline.config import EvalSpec, load_eval
from evalh_pipeline.defs.evals.checks import build_drift_checks, build_summary_checks
from evalh_pipeline.defs.evals.metadata import results_metadata, run_dir_metadata, traces_metadata
from evalh_pipeline.defs.evals.partitions import cells_partitions, group_by_run, runs_partitions
from evalh_pipeline.defs.evals.sensors import build_eval_sensors
from evalh_pipeline.defs.resources import RUNTIME_KEY, EvalhRuntime
from evalh_pipeline.queries.report import comparison_section, evaluators_table, variants_table
from evalh_pipeline.runner.drift import write_drift
from evalh_pipeline.runner.evaluation import evaluate_traces, evaluators_fingerprint
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.baselines import baseline_folder, current_baseline, promote
from evalh_pipeline.store.publishing import publish_run
from evalh_pipeline.store.run_dir import RunDirectory, run_directory
from evalh_pipeline.store.stores.sync import record_baseline


class PromoteConfig(dg.Config):
    """Which run of the eval to promote."""

    run_id: str


def _version(value: Any) -> str:
    """A short content hash used as code_version: a changed config marks the asset stale."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class EvalAssets:
    """The Dagster objects built for one eval."""

    spec: EvalSpec
    assets: list[dg.AssetsDefinition]
    jobs: list[Any]  # unresolved asset jobs, resolved by Definitions
    checks: list[dg.AssetChecksDefinition]
    sensors: list[dg.SensorDefinition] = field(default_factory=list)  # defs/evals/sensors.py

    @property
    def cells_job(self) -> str:
        return f"{self.spec.name}__cells"

    @property
    def promote_job(self) -> str:
        return f"{self.spec.name}__promote"

    @property
    def judge_job(self) -> str:
        return f"{self.spec.name}__judge"

    @property
    def summarize_job(self) -> str:
        return f"{self.spec.name}__summarize"


def build_eval_assets(spec: EvalSpec) -> EvalAssets:
    """Build the asset group, partitions and jobs of one eval."""
    name, eval_path = spec.name, spec.path
    runs = runs_partitions(name)
    cells = cells_partitions(spec)
    raw = spec.raw
    single_run = dg.BackfillPolicy.single_run()
    common = {"group_name": name, "required_resource_keys": {RUNTIME_KEY}}

    def load(context: dg.AssetExecutionContext) -> EvalSpec:
        # Re-read at execution so edits to eval.yaml apply without reloading the code location;
        # the CLI may name a run directory outside the eval's output folder (runtime.runs_root).
        return getattr(context.resources, RUNTIME_KEY).locate(load_eval(eval_path))

    @dg.asset(
        key=[name, "cases"],
        partitions_def=cells,
        backfill_policy=single_run,
        code_version=_version(raw["dataset"]),
        description=(
            f"The cases of one run of `{name}` (filtered and sampled), snapshotted in the run directory. "
            "Every variant of a run shares the snapshot; it is written once, when the run starts."
        ),
        kinds={"evalh"},
        **common,
    )
    def cases(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        live = load(context)
        per_run: dict[str, dict[str, Any]] = {}
        for run_id in group_by_run(context.partition_keys):
            info = prepare_cases(live, run_id)
            _publish(context, live, info.run_dir, "cases")
            per_run[run_id] = {
                "cases": info.cases,
                "resumed": not info.created,
                "eval_path": dg.MetadataValue.path(str(eval_path)),
                **run_dir_metadata(info.run_dir),
            }
        return dg.MaterializeResult(metadata=_merge_runs(per_run))

    @dg.asset(
        key=[name, "traces"],
        deps=[cases],
        partitions_def=cells,
        backfill_policy=single_run,
        code_version=_version({
            "systems": raw["systems"], "workspace": raw["workspace"], "samples": raw["run"]["samples_per_case"],
        }),
        description="One trace per (case, variant, sample). Write-once: rematerializing runs only missing cells.",
        kinds={"evalh"},
        **common,
    )
    def traces(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        def stage(live: EvalSpec, run_dir: RunDirectory, variants: list[str], runtime: EvalhRuntime) -> dict[str, Any]:
            stats = asyncio.run(produce_traces(
                live, run_dir, variants, max_concurrency=runtime.max_concurrency, progress=runtime.progress,
            ))
            context.log.info(f"{run_dir.run_id}: ran {stats.cells_run} cells, {stats.cells_skipped} had traces")
            return traces_metadata(stats, run_dir)

        return _over_runs(context, load(context), stage)

    @dg.asset(
        key=[name, "results"],
        deps=[traces],
        partitions_def=cells,
        backfill_policy=single_run,
        code_version=evaluators_fingerprint(spec)[:16],
        description="Evaluator verdicts on the persisted traces. Never calls the system; replaced whole per partition.",
        kinds={"evalh"},
        **common,
    )
    def results(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        def stage(live: EvalSpec, run_dir: RunDirectory, variants: list[str], runtime: EvalhRuntime) -> dict[str, Any]:
            stats = asyncio.run(evaluate_traces(
                live, run_dir, variants, max_concurrency=runtime.max_concurrency, progress=runtime.progress,
            ))
            return results_metadata(stats, run_dir)

        return _over_runs(context, load(context), stage)

    @dg.asset(
        key=[name, "summary"],
        ins={"results": dg.AssetIn(
            key=results.key,
            partition_mapping=dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="run"),
            dagster_type=dg.Nothing,
        )},
        partitions_def=runs,
        description="Per-variant and per-evaluator rollups and the baseline comparison (DuckDB over the JSONL).",
        kinds={"evalh", "duckdb"},
        **common,
    )
    def summary(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        live = load(context)
        run_dir = run_directory(live, context.partition_key)
        # A new summary makes the run's drift files stale; the drift asset rewrites them
        # (unless a blocking gate on the summary stops it: then there is no drift to show).
        for stale in (run_dir.drift, run_dir.drift_report):
            stale.unlink(missing_ok=True)
        result = write_summary(live, run_dir)
        _publish(context, live, run_dir, "summary")
        comp = result.comparison
        metadata: dict[str, Any] = {
            "cases_total": result.cases_total,
            **{f"pass_rate/{v.name}": dg.MetadataValue.float(v.pass_rate) for v in result.variants},
            **{f"errored/{v.name}": v.cases_errored for v in result.variants},
            "regressions": comp.regressions_count if comp else 0,
            "improvements": comp.improvements_count if comp else 0,
            "variants": dg.MetadataValue.md(variants_table(result)),
            "evaluators": dg.MetadataValue.md(evaluators_table(result)),
            "comparison": dg.MetadataValue.md(comparison_section(result)),
            **run_dir_metadata(run_dir),
        }
        return dg.MaterializeResult(metadata=metadata)

    @dg.asset(
        key=[name, "drift"],
        deps=[summary],
        partitions_def=runs,
        description=(
            "The run against the eval's promoted baseline run (`evalh promote`): flips per case and "
            "pass-rate deltas, in drift.yaml and drift.md (regressions first). Without a promoted "
            "baseline it says so and gates nothing."
        ),
        kinds={"evalh", "duckdb"},
        **common,
    )
    def drift(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        live = load(context)
        run_dir = run_directory(live, context.partition_key)
        result = write_drift(name, run_dir, Path(live.runs_root))
        _publish(context, live, run_dir, "drift")
        if result.comparison is None:
            context.log.info(f"{name} has no promoted baseline: nothing to compare {run_dir.run_id} with")
        return dg.MaterializeResult(metadata={
            "baseline_run_id": result.baseline_run_id or "",
            "has_baseline": result.comparison is not None,
            "regressions_count": result.regressions_count,
            "improvements_count": result.improvements_count,
            **{f"pass_rate_delta/{v}": dg.MetadataValue.float(d) for v, d in result.pass_rate_deltas().items()},
            "report": dg.MetadataValue.md(result.markdown),
            **run_dir_metadata(run_dir),
        })

    @dg.asset(
        key=[name, "baseline"],
        deps=[summary],
        description="The promoted baseline run that `evalh drift` compares against (`evalh promote`).",
        kinds={"evalh"},
        **common,
    )
    def baseline(context: dg.AssetExecutionContext, config: PromoteConfig) -> dg.MaterializeResult:
        live = load(context)
        runs_root = Path(live.runs_root)
        previous = current_baseline(runs_root, name)
        promoted = promote(run_directory(live, config.run_id))
        for failure in record_baseline(live, promoted.run_id, promoted.promoted_at.isoformat()):
            context.log.warning(f"store {failure.target} did not record baseline {promoted.run_id}: {failure.error}")
        return dg.MaterializeResult(metadata={
            "run_id": promoted.run_id,
            "previous_run_id": previous.run_id if previous else "",
            "run_dir": dg.MetadataValue.path(promoted.run_dir),
            "pointer": dg.MetadataValue.path(str(baseline_folder(runs_root, name) / "current.json")),
        })

    summarize_job = dg.define_asset_job(
        f"{name}__summarize", selection=[summary, drift], partitions_def=runs,
        description="Roll up results into summary.yaml and report.md, then compare with the promoted baseline.",
    )
    jobs = [
        dg.define_asset_job(f"{name}__promote", selection=[baseline],
                            description="Make a run the eval's baseline (run config: run_id)."),
        dg.define_asset_job(f"{name}__cells", selection=[cases, traces, results], partitions_def=cells,
                            description="Snapshot the cases (new runs), run the missing cells and judge them."),
        dg.define_asset_job(f"{name}__judge", selection=[results], partitions_def=cells,
                            description="Re-evaluate persisted traces (never calls the system)."),
        summarize_job,
    ]
    checks = build_summary_checks(spec, summary, runs) + build_drift_checks(spec, drift, runs)
    return EvalAssets(spec=spec, assets=[cases, traces, results, summary, drift, baseline], jobs=jobs, checks=checks,
                      sensors=build_eval_sensors(spec, summarize_job))


def _over_runs(
    context: dg.AssetExecutionContext,
    live: EvalSpec,
    stage: Callable[[EvalSpec, RunDirectory, list[str], EvalhRuntime], dict[str, Any]],
) -> dg.MaterializeResult:
    """Apply a per-run stage to every run in the materialized (run x variant) range."""
    runtime = getattr(context.resources, RUNTIME_KEY)
    per_run = {}
    for run_id, variants in group_by_run(context.partition_keys).items():
        run_dir = run_directory(live, run_id)
        per_run[run_id] = stage(live, run_dir, variants, runtime)
        _publish(context, live, run_dir, context.asset_key.path[-1])
    return dg.MaterializeResult(metadata=_merge_runs(per_run))


def _publish(context: dg.AssetExecutionContext, live: EvalSpec, run_dir: RunDirectory, stage: str) -> None:
    """Copy what the stage changed to the eval's output URLs (store/publishing.py).

    A canonical failure raises and fails the asset; a mirror failure is recorded in the
    run directory's publish.jsonl and logged here.
    """
    for failure in publish_run(live, run_dir, stage).failures:
        context.log.warning(f"{run_dir.run_id}: mirror {failure.target} not updated after {stage}: {failure.error}")


def _merge_runs(per_run: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One run's metadata as it is; a range over several runs (a UI backfill) keeps each
    run's figures under ``<run_id>/<key>`` rather than letting the last run overwrite them."""
    if len(per_run) == 1:
        return next(iter(per_run.values()))
    merged: dict[str, Any] = {"runs": dg.MetadataValue.json(sorted(per_run))}
    for run_id, metadata in per_run.items():
        merged.update({f"{run_id}/{key}": value for key, value in metadata.items()})
    return merged
