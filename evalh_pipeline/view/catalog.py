"""The runs folder as the viewer sees it: which runs exist, their headline figures, and
looking one up by id without ever leaving the folder.

A run id from a URL is only ever the name of a direct child of the runs folder: it must
match the run-id pattern (no ``/``, no ``..``), name a real folder (not a symlink) and be a
run (run.json, or eval-harness's four files). Nothing else of the file system is reachable.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalh_pipeline.queries.unanswered import unanswered_run
from evalh_pipeline.store.baselines import BASELINES, current_baseline
from evalh_pipeline.store.labels import LABELS
from evalh_pipeline.store.run_dir import RUN_ID_PATTERN, RunDirectory

# Folders of the runs root that are not runs.
_NOT_RUNS = {BASELINES, LABELS}


def wilson_interval(passed: int, total: int, z: float = 1.959964) -> tuple[float, float] | None:
    """The 95% Wilson score interval of a pass rate (None for no cases)."""
    if total <= 0:
        return None
    p = passed / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    margin = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - margin), min(1.0, centre + margin)


@dataclass(frozen=True)
class VariantRate:
    """One variant's headline figures in one run (from its summary.yaml)."""

    name: str
    cases: int
    passed: int
    errored: int

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.passed, self.cases)


@dataclass
class RunEntry:
    """One run of the runs list."""

    run_id: str
    eval_name: str
    created: str
    written_by: str = "evalh"
    variants: list[VariantRate] = field(default_factory=list)
    complete: bool | None = None  # None: the summary does not say (eval-harness, older runs)
    failed: bool = False  # no system answered any cell (queries/unanswered.py)
    has_summary: bool = False
    is_baseline: bool = False
    problem: str = ""  # why the run could not be read, shown instead of figures


def safe_name(name: str) -> bool:
    """A run id or eval name that is a plain file name (never a path)."""
    return bool(RUN_ID_PATTERN.match(name)) and name not in (".", "..")


class RunsFolder:
    """The runs folder the viewer serves (RUNS_DIR)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def run(self, run_id: str) -> RunDirectory | None:
        """The run ``run_id`` (a direct child of the folder), or None."""
        if not safe_name(run_id) or run_id in _NOT_RUNS:
            return None
        path = self.root / run_id
        if path.is_symlink() or not path.is_dir() or path.resolve().parent != self.root:
            return None
        run = RunDirectory(path)
        return run if run.exists() else None

    def run_ids(self) -> list[str]:
        """Every run folder's id (in no particular order: :meth:`entries` orders by time)."""
        if not self.root.is_dir():
            return []
        return [p.name for p in self.root.iterdir()
                if not p.name.startswith(".") and self.run(p.name) is not None]

    def entries(self) -> list[RunEntry]:
        """Every run (from its run.json alone: cheap), newest first; baselines marked.

        Newest by the time the run was created (run.json's ``created_at``), never by its id: a
        run named in the UI (``slow-1``) has no timestamp in its name. Figures come from
        :meth:`add_figures`, for the runs a page shows.
        """
        entries = sorted((self.entry(run_id) for run_id in self.run_ids()), key=_newest_first)
        baselines: dict[str, str | None] = {}
        for entry in entries:
            if entry.eval_name not in baselines:
                baselines[entry.eval_name] = self.baseline_of(entry.eval_name)
            entry.is_baseline = baselines[entry.eval_name] == entry.run_id
        return entries

    def baseline_of(self, eval_name: str) -> str | None:
        """The run id of ``eval_name``'s promoted baseline, if any."""
        if not safe_name(eval_name):
            return None
        try:
            baseline = current_baseline(self.root, eval_name)
        except (OSError, ValueError):
            return None
        return baseline.run_id if baseline is not None else None

    def entry(self, run_id: str) -> RunEntry:
        """One run as its run.json (or eval-harness's config.yaml) describes it."""
        run = self.run(run_id)
        assert run is not None
        try:
            meta = run.read_meta()
        except (OSError, ValueError) as exc:
            return RunEntry(run_id=run_id, eval_name="?", created="", problem=str(exc))
        return RunEntry(run_id=run_id, eval_name=str(meta.get("eval_name") or "?"),
                        created=str(meta.get("created_at") or _stamp_of(run_id)),
                        written_by=str(meta.get("written_by") or "evalh"))

    def add_figures(self, entry: RunEntry) -> RunEntry:
        """``entry`` with the pass rates and completeness its summary.yaml states."""
        run = self.run(entry.run_id)
        if run is None or entry.problem:
            return entry
        try:
            summary = read_summary(run)
        except (OSError, ValueError) as exc:
            entry.problem = f"summary.yaml unreadable: {exc}"
            return entry
        if summary is None:
            entry.complete = False
            entry.failed = unanswered_run(run.traces) is not None  # its traces step failed
            return entry
        entry.has_summary = True
        entry.variants = summary_rates(summary)
        if entry.variants and all(v.cases and v.errored == v.cases for v in entry.variants):
            entry.failed = unanswered_run(run.traces) is not None
        completeness = summary.get("completeness")
        if isinstance(completeness, dict) and isinstance(completeness.get("complete"), bool):
            entry.complete = completeness["complete"]
        if not entry.created and isinstance(summary.get("started_at"), str | int | float):
            entry.created = str(summary["started_at"])
        return entry


def _newest_first(entry: RunEntry) -> tuple[int, float, str]:
    """Sort key: runs by creation time, newest first; runs whose time is unknown last (by id)."""
    created = _parse_time(entry.created)
    if created is None:
        return (1, 0.0, entry.run_id)
    return (0, -created.timestamp(), entry.run_id)


def _parse_time(text: str) -> datetime | None:
    """An ISO 8601 time (``Z`` or an offset; a naive one is taken as UTC), or None."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


_RUN_ID_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})")


def _stamp_of(run_id: str) -> str:
    """The UTC time a run id starts with (eval-harness's runs have no run.json to say it)."""
    found = _RUN_ID_STAMP.match(run_id)
    return f"{found[1]}T{found[2]}:{found[3]}:{found[4]}Z" if found else ""


def read_summary(run: RunDirectory) -> dict[str, Any] | None:
    """The run's summary.yaml as a mapping (None when there is none yet)."""
    import yaml

    from evalh_pipeline.common.yaml_files import load_yaml_text

    if not run.summary.is_file():
        return None
    try:
        data = load_yaml_text(run.summary.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(str(exc).splitlines()[0]) from None
    if not isinstance(data, dict):
        raise ValueError("not a mapping")
    return data


def summary_rates(summary: dict[str, Any]) -> list[VariantRate]:
    """Each variant's cases, passed and errored as summary.yaml states them."""
    rates = []
    for variant in summary.get("variants") or []:
        if not isinstance(variant, dict):
            continue
        rates.append(VariantRate(name=str(variant.get("name")), cases=_int(variant.get("cases_total")),
                                 passed=_int(variant.get("cases_passed")), errored=_int(variant.get("cases_errored"))))
    return rates


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def summary_comparisons(summary: dict[str, Any] | None, baseline: str | None) -> list[dict[str, Any]] | None:
    """The summary's own comparison with its baseline variant, shaped like
    :class:`~evalh_pipeline.queries.view_run.VariantPair` (None when the summary has none for
    ``baseline``: the page then computes it with the same SQL)."""
    comparison = (summary or {}).get("comparison")
    if not isinstance(comparison, dict) or comparison.get("baseline") != baseline or baseline is None:
        return None
    if comparison.get("kind", "ad_hoc") != "ad_hoc" or not isinstance(comparison.get("deltas"), list):
        return None
    pairs = []
    for delta in comparison["deltas"]:
        if not isinstance(delta, dict):
            return None
        by_evaluator = delta.get("by_evaluator")
        pairs.append({"a": baseline, "b": str(delta.get("variant")), "overall": delta.get("significance"),
                      "by_evaluator": dict(sorted(by_evaluator.items())) if isinstance(by_evaluator, dict) else {},
                      "regressions": delta.get("regressions") or [], "improvements": delta.get("improvements") or []})
    return pairs


def summary_figures(summary: dict[str, Any] | None) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]] | None:
    """The variants table (VariantSummary fields) and evaluator -> variant -> figures
    (EvaluatorVariantRollup fields) as this project's summary.yaml states them; None when it
    does not have them in that shape (the page then computes them)."""
    variants, rollups = (summary or {}).get("variants"), (summary or {}).get("by_evaluator")
    if not isinstance(variants, list) or not isinstance(rollups, list):
        return None
    needed = ("name", "cases_total", "cases_passed", "cases_errored", "avg_latency_ms")
    if not all(isinstance(v, dict) and all(k in v for k in needed) for v in variants):
        return None
    evaluators: dict[str, dict[str, Any]] = {}
    for rollup in rollups:
        if not isinstance(rollup, dict) or not isinstance(rollup.get("by_variant"), dict):
            return None
        evaluators[str(rollup.get("evaluator"))] = {str(k): v for k, v in rollup["by_variant"].items()
                                                    if isinstance(v, dict)}
    return variants, dict(sorted(evaluators.items()))
