"""Materialization metadata: numbers the UI can plot, tables people can read."""

from typing import Any

import dagster as dg

from evalh_pipeline.runner.evaluation import EvaluationStats
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
        "cells_resumed": stats.cells_skipped,
        "cells_errored": stats.cells_errored,
        **{f"errored/{v}": c["errored"] for v, c in sorted(stats.by_variant.items())},
        "errors_by_type": dg.MetadataValue.json(stats.errors_by_type),
        "cells_by_variant": dg.MetadataValue.md("\n".join(rows)),
        **_workspace_metadata(stats),
        **run_dir_metadata(run_dir),
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
        "evaluator_errors": stats.evaluator_errors,
        **dict(sorted(rates.items())),
        "verdicts": dg.MetadataValue.md("\n".join(rows)),
        **run_dir_metadata(run_dir),
    }
