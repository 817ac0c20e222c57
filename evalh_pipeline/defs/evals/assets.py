"""One eval -> one asset group: ``cases -> traces -> results -> summary -> drift``, partitioned by run,
and ``baseline`` (so each eval is one place to go in the UI: its group, or its key prefix).

Every stage asset (and every check on them) is partitioned by the eval's dynamic partitions
``<eval>__runs``: one partition per eval run, its key the run id (defs/evals/runs.py). A
materialization of a partition is one whole eval run, every variant, never a slice of it.
The assets are thin: each calls one engine stage on the run directory and reports metadata.
Data lives in the run directory, not in an IO manager; the seam where a stage's output goes
to more stores is ``_publish``. ``baseline`` is not partitioned: it is the eval's one
promoted run, and its metadata names the partition it points at.
"""

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import dagster as dg

from evalh_pipeline.common.event_loop import run_coroutine
from evalh_pipeline.config import EvalSpec
from evalh_pipeline.defs.evals.executors import eval_executor, runs_in_process
from evalh_pipeline.defs.evals.checks import build_drift_checks, build_summary_checks
from evalh_pipeline.defs.evals.metadata import (
    calibration_metadata,
    repeats_metadata,
    results_metadata,
    run_dir_metadata,
    significance_metadata,
    traces_metadata,
)
from evalh_pipeline.defs.evals.names import (EVAL_TAG, judge_consistency_job, judge_job, op_prefix, promote_job,
                                             run_job, runs_partitions, step_values_key)
from evalh_pipeline.defs.evals.runs import judging_repeats, live_spec, rejudge_all, reuse_source, run_partition
from evalh_pipeline.defs.evals.sensors import build_eval_sensors
from evalh_pipeline.defs.evals.step_values import step_values_manager
from evalh_pipeline.defs.resources import RUNTIME_KEY, EvalhRuntime
from evalh_pipeline.common.masking import mask_text
from evalh_pipeline.defs.pools import instance_pools_url
from evalh_pipeline.defs.run_options import NO_ANSWER_KEY
from evalh_pipeline.queries.unanswered import unanswered_run
from evalh_pipeline.queries.report import (
    comparison_section,
    completeness_line,
    evaluators_table,
    points,
    rate_with_ci,
    variants_table,
)
from evalh_pipeline.runner.drift import RunDrift, write_drift
from evalh_pipeline.runner.evaluation import EvaluationStats, evaluate_traces, evaluators_fingerprint, judge_shard
from evalh_pipeline.runner.hashes import file_version
from evalh_pipeline.runner.progress import Progress
from evalh_pipeline.runner.judge_consistency import measure_judge_consistency
from evalh_pipeline.runner.stages import prepare_cases, record_evaluators, run_variants, write_summary
from evalh_pipeline.runner.shards import collect_traces as collect_shard_traces
from evalh_pipeline.runner.shards import PARTS_FOLDER, Shard, plan_trace_shards, recorded_shards
from evalh_pipeline.runner.traces import TraceStats, produce_traces
from evalh_pipeline.store.jsonl import complete_lines_digest
from evalh_pipeline.store.baselines import baseline_folder, current_baseline, promote
from evalh_pipeline.outputs.published_labels import pull_labels
from evalh_pipeline.outputs.publishing import RunPublisher, publish_baseline, pull_baseline, pull_run
from evalh_pipeline.store.run_dir import RunDirectory, run_directory
from evalh_pipeline.store.stage_runs import record_stage_run
from evalh_pipeline.outputs.sync import publish_run, record_baseline
from evalh_pipeline.view.links import run_page_url


class _AssetOptions(TypedDict):
    """What the eval's ``@dg.asset`` stages have in common."""

    group_name: str
    required_resource_keys: set[str]
    partitions_def: dg.DynamicPartitionsDefinition
    metadata: dict[str, Any]


class _JudgeOptions(TypedDict):
    """The keyword arguments a results step judges with (runner/evaluation.py)."""

    max_concurrency: int | None
    progress: Progress | None
    incremental: bool
    pools_url: str | None


def runs_partitions_def(eval_name: str) -> dg.DynamicPartitionsDefinition:
    """The eval's runs as dynamic partitions (key = run id): its stages and checks are partitioned by it."""
    return dg.DynamicPartitionsDefinition(name=runs_partitions(eval_name))


def _version(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def stage_versions(spec: EvalSpec) -> dict[str, str]:
    """Each stage's code version from the parts of ``spec`` that decide its output.

    The definitions carry the versions of the spec loaded with the code location; every
    materialization records the versions of the spec that actually ran (``spec_version``
    and its data version), so an edit made without a reload is visible on the asset.
    """
    raw = spec.raw
    return {
        "cases": _version(raw.get("dataset")),
        "traces": _version({"systems": raw.get("systems"), "workspace": raw.get("workspace"),
                            "samples": raw.get("run", {}).get("samples_per_case")}),
        "results": evaluators_fingerprint(spec)[:16],
        "summary": _version({"pass_criteria": raw.get("pass_criteria"), "baseline": raw.get("run", {}).get("baseline_variant")}),
        "drift": _version({"eval": spec.name}),
    }


@dataclass(frozen=True)
class EvalAssets:
    """The Dagster objects built for one eval."""

    spec: EvalSpec
    assets: list[dg.AssetsDefinition | dg.AssetSpec]
    jobs: list[Any]  # unresolved asset jobs (resolved by Definitions) and the promote job
    checks: list[dg.AssetChecksDefinition]
    sensors: list[dg.SensorDefinition] = field(default_factory=list)  # defs/evals/sensors.py
    resources: dict[str, Any] = field(default_factory=dict)  # the I/O manager of its graph steps

    @property
    def run_job(self) -> str:
        return run_job(self.spec.name)

    @property
    def judge_job(self) -> str:
        return judge_job(self.spec.name)

    @property
    def promote_job(self) -> str:
        return promote_job(self.spec.name)


class _Stage:
    """What every stage's step starts from: the live spec, the eval run, its directory."""

    def __init__(self, context: dg.AssetExecutionContext | dg.OpExecutionContext, loaded: EvalSpec, stage: str) -> None:
        self.context = context
        self.stage = stage
        self.live = live_spec(context.op_execution_context, loaded)
        self.run_id = run_partition(context.op_execution_context)
        self.run_dir = run_directory(self.live, self.run_id)
        # A run published to a URL may have been written on another machine (another worker):
        # the step starts from what its canonical copy holds.
        pull_run(self.live, self.run_dir)
        self.runtime: EvalhRuntime = getattr(context.resources, RUNTIME_KEY)
        # The run's pools are counted in the instance's database (every step process reaches it).
        self.pools_url = instance_pools_url(context.instance) if self.live.config.run.executor.pools else None

    def require_run(self) -> None:
        if not self.run_dir.exists():
            raise dg.Failure(f"run {self.run_id} of {self.live.name} does not exist ({self.run_dir.path} has no "
                             f"run.json): materialize `cases` first (the {run_job(self.live.name)} job does it all)")

    def variants(self) -> list[str]:
        """The run's variants (its run.json); each must still be in eval.yaml, or nothing runs."""
        names = run_variants(self.run_dir, self.live)
        missing = [n for n in names if n not in self.live.variant_names]
        if missing:
            raise dg.Failure(f"run {self.run_id} has variant(s) {', '.join(missing)} that {self.live.path} no "
                             "longer defines: restore them to finish this run, or start a new run")
        return names

    @property
    def traces_digest(self) -> str | None:
        """The digest of the run's traces.jsonl that this launch's traces stage kept (None: not written by it)."""
        return self.runtime.traces_digests.get(str(self.run_dir.path)) or None

    @property
    def traces_sealed_after(self) -> int | None:
        """The lines of traces.jsonl before the ones this launch's traces stage sealed (None: not known)."""
        return self.runtime.traces_sealed_after.get(str(self.run_dir.path))

    def result(self, metadata: dict[str, Any], data_file: Path | None = None,
               digest: str | None = None) -> dg.MaterializeResult[Any]:
        """The stage's materialization; its data version is the run, the spec version of the
        stage and, with ``data_file``, that file's version (runner/hashes.py ``file_version``):
        traces appended by a resume, or results.jsonl rewritten because an evaluator changed,
        mark everything downstream as changed upstream in the UI; an untouched file does not.
        ``digest``: the file's digest kept by the appender that just wrote it.

        The run folder records this Dagster run as the stage's maker (stage_runs.json), so the
        viewer's pages of the run link back to it without asking the instance."""
        record_stage_run(self.run_dir, self.stage, self.context.run.run_id, self.context.run.job_name)
        _publish(self.context, self.live, self.run_dir, self.stage)
        version = stage_versions(self.live)[self.stage]
        data = f"{self.run_id}:{version}" + (f":{file_version(data_file, digest)}" if data_file is not None else "")
        return dg.MaterializeResult(
            metadata={"eval": self.live.display_name, "run_id": self.run_id, **metadata, "spec_version": version,
                      "data_version": data,
                      **run_dir_metadata(self.run_dir)},
            data_version=dg.DataVersion(data),
        )


def _viewer_metadata(stage: _Stage) -> dict[str, Any]:
    """A link to the run's page in `evalh view`, always (whether a viewer runs now or not).

    The address is ``Settings.viewer_url`` (``$EVALH_VIEWER_URL``, default http://127.0.0.1:8790)
    of the settings read at the edge (the CLI's or the code location's, carried by the spec).
    """
    return {"viewer": dg.MetadataValue.url(run_page_url(stage.run_id, stage.live.settings.viewer_url))}


def build_eval_assets(spec: EvalSpec) -> EvalAssets:
    """Build the asset group, checks, jobs and sensors of one eval."""
    name = spec.name
    shown = _shown_name(spec)
    versions = stage_versions(spec)
    partitions = runs_partitions_def(name)
    common: _AssetOptions = {"group_name": name, "required_resource_keys": {RUNTIME_KEY}, "partitions_def": partitions,
              "metadata": _definition_metadata(spec)}

    @dg.asset(
        key=[name, "cases"], code_version=versions["cases"], kinds={"evalh"}, **common,
        description=(f"The cases of one run of {shown} (filtered and sampled), snapshotted with the config "
                     "in a new run directory. A run that exists keeps its snapshot (resume)."),
    )
    def cases(context: dg.AssetExecutionContext) -> dg.MaterializeResult[Any]:
        stage = _Stage(context, spec, "cases")
        info = prepare_cases(stage.live, stage.run_id)
        return stage.result({
            "cases": info.cases, "variants": dg.MetadataValue.json(run_variants(info.run_dir, stage.live)),
            "resumed": not info.created, "eval_path": dg.MetadataValue.path(str(stage.live.path)),
        })

    # traces: a graph of steps. One plans the run's shards (runner/shards.py), one step per
    # shard runs its cells (each in a process of its own on an out-of-process executor), and
    # the last collects them: the asset is materialized only once every shard is in. The
    # values passed between them live in the run's folder (defs/evals/step_values.py), so
    # the steps of one run may run on different machines.
    shard_op_tags = {"kind": "evalh"}
    values_key = step_values_key(name)

    @dg.op(name=f"{op_prefix(name)}__plan_traces", required_resource_keys={RUNTIME_KEY}, ins={"cases": dg.In(dg.Nothing)},
           out=dg.DynamicOut(Shard, io_manager_key=values_key), tags=shard_op_tags,
           description="Plan the run's shards of cells (run.json), after copying reused traces (--reuse).")
    def plan_traces(context: dg.OpExecutionContext):  # type: ignore[no-untyped-def]
        stage = _Stage(context, spec, "traces")
        stage.require_run()
        stage.variants()
        stage.runtime.traces_digests.pop(str(stage.run_dir.path), None)
        stage.runtime.traces_sealed_after.pop(str(stage.run_dir.path), None)
        reuse_from = reuse_source(context, stage.live)
        shards = plan_trace_shards(stage.live, stage.run_dir, reuse_from)
        if reuse_from is not None:
            _share_with_steps(stage)  # the reused traces, for shards on other machines
        for shard in shards:
            yield dg.DynamicOutput(shard, mapping_key=f"shard_{shard.label.replace('-', '_')}")

    @dg.op(name=f"{op_prefix(name)}__traces_shard", required_resource_keys={RUNTIME_KEY}, tags=shard_op_tags,
           out=dg.Out(TraceStats, io_manager_key=values_key),
           description="Run the cells of one shard that have no trace yet.")
    def traces_shard(context: dg.OpExecutionContext, shard: Shard) -> TraceStats:
        stage = _Stage(context, spec, "traces")
        stats = run_coroutine(produce_traces(
            stage.live, stage.run_dir, stage.variants(), max_concurrency=stage.runtime.max_concurrency,
            progress=stage.runtime.progress, reuse_from=reuse_source(context, stage.live), pools_url=stage.pools_url,
            shard=shard))
        _share_with_steps(stage, shard)  # its traces, for the collect step on any machine
        context.log.info(f"{stage.run_id} shard {shard.label}: ran {stats.cells_run} cells, {stats.cells_skipped} "
                         "had traces" + (f" ({stats.cells_reused} reused)" if stats.cells_reused else ""))
        return stats

    @dg.op(name=f"{op_prefix(name)}__collect_traces", required_resource_keys={RUNTIME_KEY}, out=dg.Out(dg.Nothing),
           tags=shard_op_tags, description="Collect every shard's traces into traces.jsonl and materialize them.")
    def collect_traces(context: dg.OpExecutionContext, shards: list[TraceStats]):  # type: ignore[no-untyped-def]
        stage = _Stage(context, spec, "traces")
        planned = len(recorded_shards(stage.run_dir))
        if len(shards) != planned:  # never a green traces asset without every shard of the plan
            raise dg.Failure(f"{stage.run_id}: {len(shards)} of {planned} shards finished; re-execute the run")
        stats = TraceStats()
        for part in shards:
            stats.add(part)
        stats.traces_digest = (collect_shard_traces(stage.run_dir) or (shards[0].traces_digest if planned == 1 else "")
                               or complete_lines_digest(stage.run_dir.traces))
        context.log.info(f"{stage.run_id}: ran {stats.cells_run} cells, {stats.cells_skipped} had traces"
                         + (f" ({stats.cells_reused} reused)" if stats.cells_reused else ""))
        stage.runtime.traces_digests[str(stage.run_dir.path)] = stats.traces_digest
        if planned == 1 and shards[0].traces_digest == stats.traces_digest and shards[0].traces_sealed_after is not None:
            stage.runtime.traces_sealed_after[str(stage.run_dir.path)] = shards[0].traces_sealed_after
        result = stage.result(traces_metadata(stats, stage.run_dir), stage.run_dir.traces, stats.traces_digest)
        # A cell of this pass without an error answered: no need to read the traces again.
        silent = unanswered_run(stage.run_dir.traces) if stats.cells_errored == stats.cells_run else None
        if silent is not None:
            # Every trace is written (and published): the step fails after them, so the run is
            # failed, not a 0% pass rate, and `evalh retry-failed` finishes it once fixed.
            raise dg.Failure(description=mask_text(silent.cause(), stage.live.secret_values),
                             metadata={**(result.metadata or {}), NO_ANSWER_KEY: silent.error_type})
        yield _graph_asset_output(result)

    @dg.graph_asset(
        key=[name, "traces"], ins={"cases": dg.AssetIn(key=cases.key, dagster_type=dg.Nothing)},
        code_version=versions["traces"], kinds={"evalh"}, group_name=name, partitions_def=partitions,
        metadata=_definition_metadata(spec),
        description=f"One trace per (case, variant, sample) of a run of {shown}, every variant. Write-once: "
                    "rematerializing runs only the cells that have no trace yet.",
    )
    def traces(cases):  # type: ignore[no-untyped-def]
        return collect_traces(plan_traces(cases).map(traces_shard).collect())

    results = _results_asset(spec, traces, partitions, values_key)

    @dg.asset(
        key=[name, "summary"], deps=[results], code_version=versions["summary"], kinds={"evalh", "duckdb"}, **common,
        description=f"{shown}: per-variant and per-evaluator rollups, completeness (expected cells against traces) and "
                    "the baseline-variant comparison (DuckDB over the JSONL).",
    )
    def summary(context: dg.AssetExecutionContext) -> dg.MaterializeResult[Any]:
        stage = _Stage(context, spec, "summary")
        stage.require_run()
        pull_labels(stage.live)  # labelled on any machine, for an eval that publishes to a URL
        result = write_summary(stage.live, stage.run_dir, stage.traces_digest)
        comp = result.comparison
        done = result.completeness
        if done is not None and not done.complete:
            context.log.warning(f"{stage.run_id}: {done.describe()}")
        return stage.result({
            "complete": done.complete if done else True,
            "completeness": completeness_line(result),
            "expected_cells": done.expected_cells if done else 0,
            "present_cells": done.present_cells if done else 0,
            "cases_total": result.cases_total,
            **{f"pass_rate/{v.name}": dg.MetadataValue.float(v.pass_rate) for v in result.variants},
            **{f"pass_rate_text/{v.name}": rate_with_ci(v.pass_rate, v.pass_rate_ci) for v in result.variants},
            **{f"errored/{v.name}": v.cases_errored for v in result.variants},
            "regressions": comp.regressions_count if comp else 0,
            "improvements": comp.improvements_count if comp else 0,
            "variants": dg.MetadataValue.md(variants_table(result)),
            "evaluators": dg.MetadataValue.md(evaluators_table(result)),
            "comparison": dg.MetadataValue.md(comparison_section(result, stage.live.config.run.baseline_variant)),
            **significance_metadata(comp.deltas if comp else []),
            **repeats_metadata(result),
            **calibration_metadata(result),
            **_viewer_metadata(stage),
        })

    @dg.asset(
        key=[name, "drift"], deps=[summary], code_version=versions["drift"], kinds={"evalh", "duckdb"}, **common,
        description=(f"A run of {shown} against the eval's promoted baseline run (`evalh promote`): flips per case and "
                     "pass-rate deltas, in drift.yaml and drift.md (regressions first). Without a promoted "
                     "baseline it says so and gates nothing."),
    )
    def drift(context: dg.AssetExecutionContext) -> dg.MaterializeResult[Any]:
        stage = _Stage(context, spec, "drift")
        stage.require_run()
        pull_baseline(stage.live, Path(stage.live.runs_root), name)  # promoted on any machine
        result = write_drift(name, stage.run_dir, Path(stage.live.runs_root))
        if result.comparison is None:
            context.log.info(f"{name} has no promoted baseline: nothing to compare {stage.run_id} with")
        return stage.result({
            "baseline_run_id": result.baseline_run_id or "",
            "has_baseline": result.comparison is not None,
            "regressions_count": result.regressions_count,
            "improvements_count": result.improvements_count,
            # In percentage points, as every delta is shown (drift.yaml keeps the raw fractions).
            **{f"pass_rate_delta_pp/{v}": dg.MetadataValue.float(points(d))
               for v, d in result.pass_rate_deltas().items()},
            **significance_metadata(result.comparison.comparison.deltas if result.comparison else []),
            **_evaluator_config_metadata(result),
            "report": dg.MetadataValue.md(result.markdown),
        })

    baseline = dg.AssetSpec(
        key=[name, "baseline"], deps=[summary], group_name=name, kinds={"evalh"},
        metadata=_definition_metadata(spec),
        description=(f"The promoted baseline run of {shown} that drift compares against. Not partitioned: it "
                     f"points at one run, and its metadata names that partition. Launch the {promote_job(name)} "
                     "job for the run to promote (or `evalh promote`)."),
    )

    @dg.op(name=f"{name}__promote_run", required_resource_keys={RUNTIME_KEY},
           description=f"Point the baseline of `{name}` at the partition's run.")
    def promote_run(context: dg.OpExecutionContext) -> None:
        live = live_spec(context, spec)
        runs_root = Path(live.runs_root)
        run_id = run_partition(context)
        run_dir = run_directory(live, run_id)
        pull_run(live, run_dir)
        if not run_dir.exists():
            raise dg.Failure(f"run {run_id} of {name} does not exist ({run_dir.path} has no run.json): "
                             "pick a partition that is a finished run")
        pull_baseline(live, runs_root, name)
        previous = current_baseline(runs_root, name)
        try:
            promoted = promote(run_dir)
        except (ValueError, OSError) as exc:
            raise dg.Failure(str(exc)) from None
        publish_baseline(live, runs_root, name)
        for failure in record_baseline(live, promoted.run_id, promoted.promoted_at.isoformat()):
            context.log.warning(f"store {failure.target} did not record baseline {promoted.run_id}: {failure.error}")
        context.log_event(dg.AssetMaterialization(asset_key=baseline.key, metadata={
            "run_id": run_id,
            "partition": run_id,
            "previous_run_id": previous.run_id if previous else "",
            "pointer": dg.MetadataValue.path(str(baseline_folder(runs_root, name) / "current.json")),
            **run_dir_metadata(run_dir),
        }))

    checks = build_summary_checks(spec, summary, partitions) + build_drift_checks(spec, drift, partitions)
    # run.executor picks where the steps run (the in-process executor by default).
    executor = eval_executor(spec)
    tags = {EVAL_TAG: name}
    jobs = [
        dg.define_asset_job(
            run_job(name), selection=dg.AssetSelection.assets(cases, traces, results, summary, drift),
            executor_def=executor, tags=tags,
            description=(f"A whole run of {shown} for one partition (the run id): snapshot the cases, run every "
                         "cell of every variant, judge, summarize and compare with the promoted baseline, with every "
                         "check, in one process (run.executor multiprocess: a process per step and shard). On a "
                         "partition that exists it resumes: only cells without a trace "
                         "call the system."),
        ),
        dg.define_asset_job(
            judge_job(name), selection=dg.AssetSelection.assets(results, summary, drift),
            executor_def=executor, tags=tags,
            description=f"Re-judge the persisted traces of the partition's run of {shown} with the current evaluators: "
                        "results, summary and drift; never calls the system.",
        ),
        _promote_job(name, promote_run, partitions, tags),
        _judge_consistency_job(spec, partitions, tags),
    ]
    return EvalAssets(spec=spec, assets=[cases, traces, results, summary, drift, baseline], jobs=jobs,
                      checks=checks, sensors=build_eval_sensors(spec), resources={values_key: step_values_manager(spec)})


@dataclass(frozen=True)
class JudgedShard:
    """What a results shard step hands the collect step: its shard and its counts (a step
    value: plain JSON in the run's folder, defs/evals/step_values.py)."""

    shard: Shard
    stats: EvaluationStats


def _results_asset(spec: EvalSpec, traces: dg.AssetsDefinition, partitions: dg.DynamicPartitionsDefinition,
                   values_key: str) -> dg.AssetsDefinition:
    """The eval's ``results`` asset: a graph of steps as ``traces``. With one shard its one
    step judges as it always did; with several, each shard's step judges its trace lines into
    parts of its own (each in a process of its own on an out-of-process executor) and the
    last puts them into the store (runner/evaluation.py ``judge_shard``)."""
    name = spec.name
    shown = _shown_name(spec)
    shard_op_tags = {"kind": "evalh"}

    @dg.op(name=f"{op_prefix(name)}__plan_results", required_resource_keys={RUNTIME_KEY}, ins={"traces": dg.In(dg.Nothing)},
           out=dg.DynamicOut(Shard, io_manager_key=values_key), tags=shard_op_tags,
           description="Plan the shards that judge the run's traces: the run's shards (run.json).")
    def plan_results(context: dg.OpExecutionContext):  # type: ignore[no-untyped-def]
        stage = _Stage(context, spec, "results")
        stage.require_run()
        stage.variants()
        for shard in recorded_shards(stage.run_dir):
            yield dg.DynamicOutput(shard, mapping_key=f"shard_{shard.label.replace('-', '_')}")

    @dg.op(name=f"{op_prefix(name)}__results_shard", required_resource_keys={RUNTIME_KEY}, tags=shard_op_tags,
           out=dg.Out(JudgedShard, io_manager_key=values_key),
           description="Judge the trace lines of one shard that have no current result.")
    def results_shard(context: dg.OpExecutionContext, shard: Shard) -> JudgedShard:
        stage = _Stage(context, spec, "results")
        options: _JudgeOptions = {"max_concurrency": stage.runtime.max_concurrency, "progress": stage.runtime.progress,
                   "incremental": not rejudge_all(context), "pools_url": stage.pools_url}
        if shard.whole:  # judged and written at once, as a run without shards
            stats = run_coroutine(evaluate_traces(stage.live, stage.run_dir, stage.variants(),
                                                  traces_digest=stage.traces_digest,
                                                  traces_sealed_after=stage.traces_sealed_after, **options))
        else:
            stats = run_coroutine(judge_shard(stage.live, stage.run_dir, stage.variants(), shard, **options))
        _share_with_steps(stage, shard)  # its results part, for the collect step on any machine
        return JudgedShard(shard, stats)

    @dg.op(name=f"{op_prefix(name)}__collect_results", required_resource_keys={RUNTIME_KEY}, out=dg.Out(dg.Nothing),
           tags=shard_op_tags, description="Put every shard's results into the store and results.jsonl; materialize them.")
    def collect_results(context: dg.OpExecutionContext, judged: list[JudgedShard]):  # type: ignore[no-untyped-def]
        stage = _Stage(context, spec, "results")
        planned = len(recorded_shards(stage.run_dir))
        if len(judged) != planned:  # never green results without every shard of the plan
            raise dg.Failure(f"{stage.run_id}: {len(judged)} of {planned} results shards finished; re-execute the run")
        if planned == 1:
            stats = judged[0].stats
        else:
            stats = run_coroutine(evaluate_traces(
                stage.live, stage.run_dir, stage.variants(), max_concurrency=stage.runtime.max_concurrency,
                incremental=not rejudge_all(context), traces_digest=stage.traces_digest,
                pools_url=stage.pools_url, judged=[(part.shard, part.stats) for part in sorted(judged, key=lambda part: part.shard.index)]))
        judged_with = record_evaluators(stage.live, stage.run_dir, evaluators_fingerprint(stage.live))
        result = stage.result({
            **results_metadata(stats, stage.run_dir),
            # Which evaluator configuration produced these results (config.yaml keeps the one the
            # run started with): also in the run folder's evaluators.yaml.
            "evaluators_config_hash": judged_with["evaluators_config_hash"],
            "evaluators_config": dg.MetadataValue.json(judged_with["evaluators"]),
            "evaluators_record": dg.MetadataValue.path(str(stage.run_dir.evaluators_yaml)),
        }, stage.run_dir.results)
        yield _graph_asset_output(result)

    @dg.graph_asset(
        key=[name, "results"], ins={"traces": dg.AssetIn(key=traces.key, dagster_type=dg.Nothing)},
        code_version=stage_versions(spec)["results"], kinds={"evalh"}, group_name=name, partitions_def=partitions,
        metadata=_definition_metadata(spec),
        description=(f"Evaluator verdicts on the persisted traces of a run of {shown}. Never calls the system; re-judges only "
                     "evaluators whose config changed and traces appended since (tag evalh/rejudge=all: every "
                     "result); the other results are kept byte for byte. A run of several shards judges them "
                     "side by side."),
    )
    def results(traces):  # type: ignore[no-untyped-def]
        return collect_results(plan_results(traces).map(results_shard).collect())
    return results


def _evaluator_config_metadata(result: RunDrift) -> dict[str, Any]:
    """When the baseline and the run were judged with different evaluator configs: which, the
    regressions only that explains, and the command that re-judges the baseline (no system call)."""
    comparison = result.comparison
    if comparison is None or not comparison.evaluator_changes:
        return {}
    return {
        "evaluator_configs_differ": dg.MetadataValue.json(
            [{"evaluator": c.evaluator, "baseline": c.hash_a, "run": c.hash_b} for c in comparison.evaluator_changes]),
        "evaluator_config_only_regressions": sum(len(c) for c in comparison.evaluator_only_regressions.values()),
        "system_regressions_count": comparison.system_regressions_count,
        "rejudge_baseline": result.rejudge_baseline or "",
    }


def _shown_name(spec: EvalSpec) -> str:
    """The eval as descriptions name it: ``agent main`` (key `agent_main`) when eval.yaml's name is no key."""
    if spec.display_name == spec.name:
        return f"`{spec.name}`"
    return f"{spec.display_name} (key `{spec.name}`)"


def _definition_metadata(spec: EvalSpec) -> dict[str, Any]:
    """What every asset of the eval shows in its definition: the eval's name as eval.yaml gives it, and the file."""
    return {"eval": spec.display_name, "eval_key": spec.name, "eval_file": dg.MetadataValue.path(str(spec.path))}


def _promote_job(name: str, promote_run: dg.OpDefinition, partitions: dg.PartitionsDefinition,
                 tags: dict[str, str]) -> dg.JobDefinition:
    """``<eval>__promote``: partitioned like the runs, so the UI's launchpad asks which run to promote."""

    @dg.job(name=promote_job(name), partitions_def=partitions, executor_def=dg.in_process_executor, tags=tags,
            description=f"Make the partition's run the baseline of `{name}` that drift compares against.")
    def promote_runs() -> None:
        promote_run()

    return promote_runs


def _judge_consistency_job(spec: EvalSpec, partitions: dg.PartitionsDefinition,
                           tags: dict[str, str]) -> dg.JobDefinition:
    """``<eval>__judge_consistency``: partitioned like the runs; a measurement of the judges, not a stage."""
    name = spec.name

    @dg.op(name=f"{name}__measure_judges", required_resource_keys={RUNTIME_KEY},
           description=f"Judge every answered trace of the partition's run of `{name}` K times (tag "
                       "evalh/repeat_judging, default 3) with each evaluator that calls a model: each judge's "
                       "flip rate in judge_consistency.jsonl. Results, summary and systems are untouched.")
    def measure_judges(context: dg.OpExecutionContext) -> None:
        live = live_spec(context, spec)
        run_id = run_partition(context)
        run_dir = run_directory(live, run_id)
        if not run_dir.exists():
            raise dg.Failure(f"run {run_id} of {name} does not exist ({run_dir.path} has no run.json): "
                             "pick a partition that is a finished run")
        runtime: EvalhRuntime = getattr(context.resources, RUNTIME_KEY)
        measured = run_coroutine(measure_judge_consistency(live, run_dir, judging_repeats(context),
                                                           max_concurrency=runtime.max_concurrency))
        for line in measured:
            context.log.info(f"{line.evaluator}: " + (f"skipped, {line.skipped}" if line.skipped is not None
                                                       else f"flip rate {line.flip_rate}, {line.cells} cells"))

    @dg.job(name=judge_consistency_job(name), partitions_def=partitions, executor_def=dg.in_process_executor,
            tags=tags, description=f"Measure how often the judges of `{name}` flip on the partition's run "
                                    "(`evalh re-evaluate RUN --repeat-judging K`).")
    def judge_consistency_runs() -> None:
        measure_judges()

    return judge_consistency_runs


def _graph_asset_output(result: dg.MaterializeResult[Any]) -> dg.Output[None]:
    """The collect op's Output, which is how a graph-backed asset gives its metadata and data
    version. ``data_version`` on an Output is "beta" in Dagster 1.13: the warning is silenced for
    this one call only (pinned Dagster, tested here), the same versions the other stages give."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.Output(None, metadata=result.metadata, data_version=result.data_version)


def _share_with_steps(stage: _Stage, shard: Shard | None = None) -> None:
    """Put what a step of the traces or results graph wrote at the run's canonical URL, when the run's
    steps may run on other machines (they read the run from there): the other steps of the
    graph, and the collect step, pull it. In process (the default) every step sees the same
    working copy: nothing is uploaded before the stage ends.

    A step of one shard (of several) never publishes another shard's parts: its working copy
    may hold a stale one (a part this machine wrote before its step was killed, which the
    shard's new step on another machine has since completed at the URL)."""
    if runs_in_process(stage.live):
        return
    publisher = RunPublisher.for_spec(stage.live)
    if publisher.canonical is None:  # the mirrors take the collected traces.jsonl
        return
    own = ((f"{PARTS_FOLDER}/traces.{shard.label}.jsonl", f"{PARTS_FOLDER}/results.{shard.label}/")
           if shard is not None and not shard.whole else None)

    def others_part(relative: str) -> bool:
        return own is not None and relative.startswith(f"{PARTS_FOLDER}/") and not relative.startswith(own)

    RunPublisher(publisher.canonical).publish(stage.run_dir, stage.stage, skip=others_part)


def _publish(context: dg.AssetExecutionContext | dg.OpExecutionContext, live: EvalSpec, run_dir: RunDirectory, stage: str) -> None:
    """Copy what the stage changed to the eval's output URLs (outputs/publishing.py).

    A canonical failure raises and fails the asset; a mirror failure is recorded in the
    run directory's publish.jsonl and logged here.
    """
    for failure in publish_run(live, run_dir, stage).failures:
        context.log.warning(f"{run_dir.run_id}: mirror {failure.target} not updated after {stage}: {failure.error}")
