"""The stages of a run, as the Dagster assets and the CLI call them.

``prepare_cases -> produce_traces -> evaluate_traces -> write_summary``; each stage reads
and writes only the run directory, so any stage can be re-run on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from datetime import datetime, timezone
from typing import Any

from evalh_pipeline.common.masking import mask_config
from evalh_pipeline.config.dataset import select_cases
from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.models import Completeness, RunSummary
from evalh_pipeline.models.summary import VariantCompleteness
from evalh_pipeline.queries.report import render_report
from evalh_pipeline.queries.calibration import add_calibration
from evalh_pipeline.queries.summary import summarize_run
from evalh_pipeline.runner.cells import count_cases, planned_cases
from evalh_pipeline.runner.shards import record_shard_count, shard_count
from evalh_pipeline.runs import read_summary
from evalh_pipeline.store.jsonl import JsonlAppender
from evalh_pipeline.store.locking import locked
from evalh_pipeline.common.yaml_files import dump_yaml, load_yaml_text
from evalh_pipeline.store.run_dir import RunDirectory, run_directory, staged_run_directory, write_atomic, write_run_header
from evalh_pipeline.workspaces.ledger import read_accounting


@dataclass(frozen=True)
class CasesInfo:
    run_dir: RunDirectory
    cases: int
    config_hash: str
    created: bool


def prepare_cases(spec: EvalSpec, run_id: str) -> CasesInfo:
    """Create the run directory with its config snapshot and the selected cases.

    An existing run directory is kept as it is (resume): its cases are the ones the run
    started with, even if the dataset changed since.
    """
    existing = run_directory(spec, run_id)
    if existing.exists():
        return CasesInfo(existing, count_cases(existing.cases), existing.read_config_hash(), created=False)
    with staged_run_directory(spec, run_id) as staging:
        digest = write_run_header(staging, spec, run_id)
        count = cells = 0
        with JsonlAppender(staging.cases) as out:
            for case in select_cases(spec, run_id):
                out.write(case.model_dump_json())
                count += 1
                cells += sum(case.runs_on(name) for name in spec.variant_names)
        # Fixed for the run: every pass (a resume, a re-execution) plans the same shards.
        cells *= spec.config.run.samples_per_case
        record_shard_count(staging, shard_count(spec.config.run, cells))
    return CasesInfo(existing, count, digest, created=True)


def run_variants(run_dir: RunDirectory, spec: EvalSpec | None = None) -> list[str]:
    """The variants a run was started with (run.json), else ``spec``'s."""
    meta = run_dir.read_meta() if run_dir.exists() else {}
    variants = meta.get("variants")
    if isinstance(variants, list) and variants:
        return [str(v) for v in variants]
    return spec.variant_names if spec is not None else []


def run_samples(run_dir: RunDirectory, default: int = 1) -> int:
    """``run.samples_per_case`` of the run's config snapshot (config.yaml)."""
    try:
        snapshot = load_yaml_text(run_dir.config_yaml.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        return default
    value = ((snapshot.get("run") or {}) if isinstance(snapshot, dict) else {}).get("samples_per_case", default)
    return value if isinstance(value, int) and value >= 1 else default


def completeness(run_dir: RunDirectory, summary: RunSummary, cases: int, spec: EvalSpec | None = None) -> Completeness:
    """Expected cells from the run's own snapshot against the traces the summary counted: a
    case's cells on the variants its ``variants`` leave out are not expected (none exist)."""
    samples = run_samples(run_dir, spec.config.run.samples_per_case if spec is not None else 1)
    present = {v.name: v.cases_total for v in summary.variants}
    names = run_variants(run_dir, spec)
    planned = planned_cases(run_dir.cases, names) if run_dir.cases.exists() else dict.fromkeys(names, cases)
    by_variant = {name: VariantCompleteness(expected=planned[name] * samples, present=present.get(name, 0))
                  for name in names}
    expected = sum(c.expected for c in by_variant.values())
    found = sum(c.present for c in by_variant.values())
    return Completeness(
        complete=all(c.present >= c.expected for c in by_variant.values()),
        expected_cells=expected, present_cells=found, by_variant=by_variant,
    )


def write_summary(spec: EvalSpec, run_dir: RunDirectory, traces_digest: str | None = None) -> RunSummary:
    """Aggregate traces + results into summary.yaml and report.md (atomically).

    A new summary makes the run's drift files stale: they are removed (the drift stage
    writes them again). ``traces_digest``: the digest of traces.jsonl's complete lines the
    traces stage of the same launch kept (``TraceStats.traces_digest``; None: read the file)."""
    with locked(run_dir.lock):  # never from a traces/results file another writer is changing
        for stale in (run_dir.drift, run_dir.drift_report):
            stale.unlink(missing_ok=True)
        summary = _write_summary(spec, run_dir, traces_digest)
    return summary


def _write_summary(spec: EvalSpec, run_dir: RunDirectory, traces_digest: str | None) -> RunSummary:
    variants = run_variants(run_dir, spec)
    summary = summarize_run(
        run_dir,
        variant_order=variants,
        pass_criteria=spec.config.pass_criteria,
        baseline_variant=spec.config.run.baseline_variant,
        config_path=str(spec.path),
        config_hash=run_dir.read_config_hash(),
        metadata=spec.config.metadata,
        cluster_by=spec.config.run.cluster_by,
        traces_digest=traces_digest,
    )
    summary = add_calibration(summary, run_dir, Path(spec.runs_root), spec.name)
    cases = summary.cases_total
    summary.completeness = completeness(run_dir, summary, cases, spec)
    accounting = read_accounting(run_dir.path)
    if accounting is not None:
        summary.workspace = {**accounting.as_dict(), "mismatch": accounting.mismatch()}
    write_atomic(run_dir.summary, dump_yaml(summary.model_dump(mode="json")))
    write_atomic(run_dir.report, render_report(summary, spec.display_name, spec.config.run.baseline_variant))
    return summary


def record_evaluators(spec: EvalSpec, run_dir: RunDirectory, config_hash: str) -> dict[str, Any]:
    """Write which evaluator configuration judged the run's current results (evaluators.yaml):
    config.yaml keeps the configuration the run started with; re-judging with edited
    evaluators replaces this record. Returns what was written."""
    record = {
        "evaluators_config_hash": config_hash,
        "judged_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
        "eval_path": str(spec.path),
        "evaluators": mask_config({"evaluators": spec.raw.get("evaluators") or []}, spec.secret_values)["evaluators"],
        "pass_criteria": spec.raw.get("pass_criteria") or {},
    }
    write_atomic(run_dir.evaluators_yaml, dump_yaml(record))
    return record


def load_summary(run_dir: RunDirectory) -> RunSummary:
    """A run's summary.yaml (the public reader's, evalh_pipeline/runs.py)."""
    return read_summary(run_dir)
