"""Materialization metadata: numbers the UI can plot, tables people can read."""

from typing import Any

import dagster as dg

from evalh_pipeline.models import RunSummary
from evalh_pipeline.queries.report import calibration_line, ci_text, points, rate_with_ci, reading, repeats_section
from evalh_pipeline.runner.evaluation import EvaluationStats
from evalh_pipeline.runner.reuse import recorded_reuse
from evalh_pipeline.runner.traces import TraceStats
from evalh_pipeline.store.fixtures import recorded_fixtures
from evalh_pipeline.store.run_dir import RunDirectory


def run_dir_metadata(run_dir: RunDirectory) -> dict[str, Any]:
    """The run directory, its config hash and the fixtures it was made from (lineage).

    ``fixture_commit`` only when every input was tracked and unmodified in git; otherwise
    ``fixture_status`` says ``modified`` or ``untracked`` and ``fixture_key`` is the content hash.
    """
    fixtures = recorded_fixtures(run_dir.read_meta()) if run_dir.exists() else {}
    lineage = {f"fixture_{key}": value for key, value in (
        ("commit", fixtures.get("commit", "")),
        ("status", fixtures.get("status", "")),
        ("key", fixtures.get("key", "")),
        ("dataset_sha256", fixtures.get("dataset_hash", "")),
        ("workspace", fixtures.get("workspace", "")),
    ) if value}
    return {"run_dir": dg.MetadataValue.path(str(run_dir.path)), "config_hash": run_dir.read_config_hash(), **lineage}


def traces_metadata(stats: TraceStats, run_dir: RunDirectory) -> dict[str, Any]:
    rows = ["| variant | cells run | errored |", "|---|---:|---:|"]
    rows += [f"| {v} | {c['run']} | {c['errored']} |" for v, c in sorted(stats.by_variant.items())]
    return {
        "cells": stats.cells_total,
        "cells_run": stats.cells_run,
        "cells_resumed": stats.cells_skipped - stats.cells_reused,
        "cells_reused": stats.cells_reused,
        "cells_errored": stats.cells_errored,
        **{f"errored/{v}": c["errored"] for v, c in sorted(stats.by_variant.items())},
        "errors_by_type": dg.MetadataValue.json(stats.errors_by_type),
        "cells_by_variant": dg.MetadataValue.md("\n".join(rows)),
        **_reuse_metadata(run_dir),
        **_workspace_metadata(stats),
        **run_dir_metadata(run_dir),
    }


def _reuse_metadata(run_dir: RunDirectory) -> dict[str, Any]:
    """Lineage of a run that copied unchanged traces from an earlier run (runner/reuse.py)."""
    record = recorded_reuse(run_dir)
    if record is None:
        return {}
    return {
        "reused_from_run_id": record["from_run_id"],
        "reused_from": dg.MetadataValue.path(record["from_path"]),
        "cells_changed_since": record.get("changed", 0),
    }


def _workspace_metadata(stats: TraceStats) -> dict[str, Any]:
    if not stats.workspace:
        return {}
    return {
        "artifacts": stats.artifacts,
        "artifact_bytes": stats.artifact_bytes,
        "workspace_bytes": dg.MetadataValue.json(stats.workspace),
    }


def results_metadata(stats: EvaluationStats, run_dir: RunDirectory) -> dict[str, Any]:
    variants = sorted(stats.by_variant)
    evaluators = sorted({e for by in stats.by_variant.values() for e in by})
    rows = ["| evaluator | " + " | ".join(variants) + " |", "|---|" + "---:|" * len(variants)]
    for evaluator in evaluators:
        cells = []
        for variant in variants:
            passed, judged = stats.by_variant[variant].get(evaluator, [0, 0])
            cells.append(f"{passed}/{judged}" if judged else "–")
        rows.append(f"| {evaluator} | " + " | ".join(cells) + " |")
    rates = {}
    for variant, by in stats.by_variant.items():
        passed = sum(p for p, _ in by.values())
        judged = sum(j for _, j in by.values())
        rates[f"evaluator_pass_rate/{variant}"] = dg.MetadataValue.float(passed / judged if judged else 0.0)
    return {
        "traces_judged": stats.traces,
        "results": stats.results,
        "results_kept": stats.results_kept,
        "evaluators_rejudged": dg.MetadataValue.json(stats.evaluators_rejudged),
        "traces_appended": stats.traces_appended,
        "evaluator_errors": stats.evaluator_errors,
        **dict(sorted(rates.items())),
        "verdicts": dg.MetadataValue.md("\n".join(rows)),
        **run_dir_metadata(run_dir),
    }


def significance_metadata(deltas: list[Any]) -> dict[str, Any]:
    """Per variant: McNemar p-value (a number the UI plots), the smallest detectable drop in
    percentage points (as the terminal says it), the delta's 95% CI and the verdict in words. ``deltas`` are VariantDelta models or compare's Flips (same attribute names)."""
    metadata: dict[str, Any] = {}
    for d in deltas:
        stats = d.significance
        if stats is None:
            continue
        if stats.mcnemar_p_value is not None:
            metadata[f"mcnemar_p_value/{d.variant}"] = dg.MetadataValue.float(stats.mcnemar_p_value)
        if stats.delta_ci95 is not None:
            metadata[f"delta_ci95/{d.variant}"] = ci_text(stats)
        if stats.mde is not None:
            metadata[f"mde_pp/{d.variant}"] = dg.MetadataValue.float(points(stats.mde))
        metadata[f"verdict/{d.variant}"] = stats.verdict
        metadata[f"reading/{d.variant}"] = reading(stats)
    return metadata


def calibration_metadata(summary: RunSummary) -> dict[str, Any]:
    """For each evaluator with human labels: its calibration in one line, and per variant the
    pass rate corrected for the judge's error, as a number (a fraction, like ``pass_rate/``,
    for the UI's plots) and as text with its interval (``61.2% (95% CI 44.0–78.4%)``), and the
    corrected delta against the baseline variant in percentage points."""
    metadata: dict[str, Any] = {}
    for rollup in summary.by_evaluator:
        line = calibration_line(rollup)
        if line is None:
            continue
        metadata[f"judge_calibration/{rollup.evaluator}"] = line
        for variant, figures in rollup.by_variant.items():
            corrected, delta = figures.pass_rate_corrected, figures.pass_rate_delta_corrected
            if corrected is not None:
                key = f"{rollup.evaluator}/{variant}"
                metadata[f"pass_rate_corrected/{key}"] = dg.MetadataValue.float(corrected.estimate)
                metadata[f"pass_rate_corrected_text/{key}"] = rate_with_ci(corrected.estimate,
                                                                           [corrected.ci_low, corrected.ci_high])
            if delta is not None:
                metadata[f"pass_rate_delta_corrected_pp/{rollup.evaluator}/{variant}"] = (
                    dg.MetadataValue.float(points(delta.estimate)))
    return metadata


def repeats_metadata(summary: RunSummary) -> dict[str, Any]:
    """With several samples per case: pass@k / pass^k per variant, flaky-case counts and the report section."""
    repeated = [(v.name, v.repeats) for v in summary.variants if v.repeats is not None]
    if not repeated:
        return {}
    metadata: dict[str, Any] = {}
    for name, repeats in repeated:
        k = repeats.samples_per_case
        if k in repeats.pass_at_k:
            metadata[f"pass_at_{k}/{name}"] = dg.MetadataValue.float(repeats.pass_at_k[k])
            metadata[f"pass_hat_{k}/{name}"] = dg.MetadataValue.float(repeats.pass_hat_k[k])
        metadata[f"flaky_cases/{name}"] = len(repeats.flaky_cases)
    metadata["repeats"] = dg.MetadataValue.md(repeats_section(summary))
    return metadata
