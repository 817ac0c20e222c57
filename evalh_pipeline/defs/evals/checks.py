"""Asset checks on each run: ``complete`` and the release gates (``gates:`` in eval.yaml).

The gates themselves are the engine's (runner/gates.py: the CLI judges with the same
functions). Here each stage's gates become one multi-asset check on its asset: ``summary``
gets ``complete`` and the baseline-variant gates, ``drift`` the promoted-baseline ones. A
gate that fails is a failed (red) check whose metadata lists the regressed case ids; the run
still completes and drift is still computed. Only ``gates.blocking: true`` makes the gates
blocking (a failed gate then fails the Dagster run, and a failed summary gate stops the drift).

Every check is defined for every eval and reads the gates of the eval.yaml as it is when it
runs, so turning a gate on or off, or moving a floor, needs no reload.
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.defs.evals.runs import live_spec, resolve_run_id
from evalh_pipeline.defs.resources import RUNTIME_KEY
from evalh_pipeline.runner.gates import DRIFT, GATES, SUMMARY, Gate, GateVerdict, Json, Markdown, RunFiles
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


def _checks(spec: EvalSpec, asset: dg.AssetsDefinition, stage: str) -> dg.AssetChecksDefinition:
    """The checks of one asset as one step (each check can still run alone: can_subset).

    One step rather than one per check: every step costs the run a handful of events in
    Dagster's storage, which is most of what a run spends after its cells are done."""
    (key,) = asset.keys
    gates = [gate for gate in GATES if gate.stage == stage]
    by_key = {dg.AssetCheckKey(key, gate.name): gate for gate in gates}

    @dg.multi_asset_check(
        specs=[dg.AssetCheckSpec(gate.name, asset=asset, description=gate.description, blocking=gate.blocking(spec))
               for gate in gates],
        name=f"{'__'.join(key.path)}__checks".replace("/", "_"), can_subset=True,
        required_resource_keys={RUNTIME_KEY},
    )
    def _run(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        op = context.op_execution_context
        live = live_spec(op, spec)
        run_dir = run_directory(live, resolve_run_id(op, spec.name))
        # The CLI judged the gates already (defs/record_after.py): report its verdicts, which it printed.
        prestarted = getattr(op.resources, RUNTIME_KEY).prestarted_for(run_dir.run_id)
        judged = prestarted.gates if prestarted is not None and prestarted.gates is not None else {}
        files = RunFiles(run_dir)  # the step's checks read summary.yaml / drift.yaml once
        for check_key in sorted(context.selected_asset_check_keys, key=lambda k: k.name):
            gate = by_key[check_key]
            verdict = judged.get(gate.name) or gate.judge(live, files)
            yield check_result(key, gate, verdict, run_dir.run_id)

    return _run


def build_summary_checks(spec: EvalSpec, summary: dg.AssetsDefinition) -> list[dg.AssetChecksDefinition]:
    """``complete`` and the baseline-variant gates on ``summary``."""
    return [_checks(spec, summary, SUMMARY)]


def build_drift_checks(spec: EvalSpec, drift: dg.AssetsDefinition) -> list[dg.AssetChecksDefinition]:
    """The promoted-baseline gates on ``drift``."""
    return [_checks(spec, drift, DRIFT)]


__all__ = ["build_drift_checks", "build_summary_checks", "check_result"]
