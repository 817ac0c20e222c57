"""Asset checks on each run: ``complete`` and the release gates (``gates:`` in eval.yaml).

The gates themselves are the engine's (runner/gates.py: the CLI judges with the same
functions). Here each stage's gates become one multi-asset check on its asset: ``summary``
gets ``complete`` and the baseline-variant gates, ``drift`` the promoted-baseline ones. A
gate that fails is a failed (red) check whose metadata lists the regressed case ids; the run
still completes and drift is still computed. Only ``gates.blocking: true`` makes the gates
blocking (a failed gate then fails the Dagster run, and a failed summary gate stops the drift).

Every check is defined for every eval and reads the gates of the eval.yaml as it is when it
runs, so turning a gate on or off, or moving a floor, needs no reload. The checks are
partitioned like their asset: each evaluation is recorded for the partition (eval run) it
checked, and executing a check alone from the UI asks for that partition.
"""

import warnings
from collections.abc import Iterator
from typing import Any

import dagster as dg

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.defs.evals.runs import live_spec, run_partition
from evalh_pipeline.defs.resources import RUNTIME_KEY
from evalh_pipeline.runner.gates import DRIFT, GATES, SUMMARY, Gate, GateVerdict, Json, Markdown, RunFiles
from evalh_pipeline.outputs.publishing import pull_run, record_files
from evalh_pipeline.store.run_dir import run_directory


def _metadata_value(value: Any) -> Any:
    if isinstance(value, Markdown):
        return dg.MetadataValue.md(value.text)
    if isinstance(value, Json):
        return dg.MetadataValue.json(value.value)
    return value


def check_result(key: dg.AssetKey, gate: Gate, verdict: GateVerdict, run_id: str) -> dg.AssetCheckResult:
    """A gate's verdict as Dagster's check result (failed checks are errors: red in the UI)."""
    return dg.AssetCheckResult(
        asset_key=key, check_name=gate.name, passed=verdict.passed, severity=dg.AssetCheckSeverity.ERROR,
        description=verdict.description,
        metadata={"run_id": run_id, **{k: _metadata_value(v) for k, v in verdict.metadata.items()}},
    )


def _checks(spec: EvalSpec, asset: dg.AssetsDefinition, stage: str,
            partitions: dg.PartitionsDefinition) -> dg.AssetChecksDefinition:
    """The checks of one asset as one step (each check can still run alone: can_subset).

    One step rather than one per check: every step costs the run a handful of events in
    Dagster's storage, which is most of what a run spends after its cells are done."""
    (key,) = asset.keys
    gates = [gate for gate in GATES if gate.stage == stage]
    by_key = {dg.AssetCheckKey(key, gate.name): gate for gate in gates}

    with warnings.catch_warnings():
        # Partitioned checks are a "preview" in Dagster 1.13; they are what makes a check's
        # verdict belong to one eval run, so evalh uses them (pinned Dagster, tested here).
        warnings.simplefilter("ignore", dg.PreviewWarning)
        specs = [dg.AssetCheckSpec(gate.name, asset=asset, description=gate.description, blocking=gate.blocking(spec),
                                   partitions_def=partitions)
                 for gate in gates]

    @dg.multi_asset_check(
        specs=specs,
        name=f"{'__'.join(key.path)}__checks".replace("/", "_"), can_subset=True,
        required_resource_keys={RUNTIME_KEY},
    )
    def _run(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        op = context.op_execution_context
        live = live_spec(op, spec)
        run_dir = run_directory(live, run_partition(op))
        # Its stage may have run on another machine (defs/evals/assets.py _Stage); the gates read
        # summary.yaml and drift.yaml only, never the run's records.
        pull_run(live, run_dir, skip=record_files(run_dir))
        if not run_dir.exists():
            raise dg.Failure(f"run {run_dir.run_id} of {spec.name} does not exist ({run_dir.path} has no run.json)")
        files = RunFiles(run_dir)  # the step's checks read summary.yaml / drift.yaml once
        for check_key in sorted(context.selected_asset_check_keys, key=lambda k: k.name):
            gate = by_key[check_key]
            yield check_result(key, gate, gate.judge(live, files), run_dir.run_id)

    return _run


def build_summary_checks(spec: EvalSpec, summary: dg.AssetsDefinition,
                         partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    """``complete`` and the baseline-variant gates on ``summary``."""
    return [_checks(spec, summary, SUMMARY, partitions)]


def build_drift_checks(spec: EvalSpec, drift: dg.AssetsDefinition,
                       partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    """The promoted-baseline gates on ``drift``."""
    return [_checks(spec, drift, DRIFT, partitions)]


__all__ = ["build_drift_checks", "build_summary_checks", "check_result"]
