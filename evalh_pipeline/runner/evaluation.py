"""Judge persisted traces: every evaluator on every trace, results replaced per variant.

Reads only the run directory (cases snapshot + traces), never the system under test, so
re-evaluation is cheap and repeatable. An evaluator that raises fails its own result only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import traceback
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorContext, Verdict
from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.models import EvalCase, EvaluationResult, FilesystemArtifact, Trace, TraceError
from evalh_pipeline.runner.pool import run_bounded
from evalh_pipeline.runner.progress import NoProgress, Progress
from evalh_pipeline.store.case_index import CaseIndex
from evalh_pipeline.store.jsonl import iter_lines, iter_records
from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic

# Cells the runner never started have nothing to judge.
UNJUDGED_ERRORS = frozenset({"cost_limit"})


@dataclass
class EvaluationStats:
    traces: int = 0
    results: int = 0
    evaluator_errors: int = 0
    # variant -> evaluator -> [passed, judged]
    by_variant: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def count(self, result: EvaluationResult) -> None:
        self.results += 1
        self.evaluator_errors += result.error is not None
        tally = self.by_variant.setdefault(result.variant_name, {}).setdefault(result.evaluator, [0, 0])
        tally[0] += result.passed
        tally[1] += 1


def evaluators_fingerprint(spec: EvalSpec) -> str:
    """A hash of everything that decides verdicts: evaluator configs and pass criteria."""
    body = json.dumps({"evaluators": spec.raw["evaluators"], "pass_criteria": spec.raw["pass_criteria"]},
                      sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def build_evaluators(spec: EvalSpec, only: list[str] | None = None) -> list[Evaluator]:
    """Instantiate the eval's evaluators (all, or the named ones)."""
    selected = [e for e in spec.config.evaluators if only is None or e.name in only]
    missing = set(only or []) - {e.name for e in selected}
    if missing:
        raise ValueError(f"no evaluator named {', '.join(sorted(missing))} in {spec.path.name}")
    context = evaluator_context(spec)
    return [EVALUATORS.get(e.type)(e.name, e.type, e.config, context) for e in selected]


def evaluator_context(spec: EvalSpec) -> EvaluatorContext:
    """The context every evaluator of ``spec`` is built with."""
    return EvaluatorContext(
        eval_dir=spec.eval_dir,
        env=dict(os.environ),
        secret_values=spec.secret_values,
        cache_dir=Path(spec.runs_root) / ".cache" if "://" not in str(spec.runs_root) else None,
        max_concurrency=spec.config.run.max_concurrency,
    )


async def evaluate_traces(
    spec: EvalSpec,
    run_dir: RunDirectory,
    variant_names: list[str] | None = None,
    *,
    evaluator_names: list[str] | None = None,
    max_concurrency: int | None = None,
    progress: Progress | None = None,
) -> EvaluationStats:
    """(Re)judge the traces of ``variant_names``; their old results are replaced whole."""
    progress = progress or NoProgress()
    evaluators = build_evaluators(spec, evaluator_names)
    variants = set(variant_names if variant_names is not None else spec.variant_names)
    concurrency = max_concurrency or spec.config.run.max_concurrency
    stats = EvaluationStats()
    if evaluator_names is None and adopt_inline_results(run_dir, sorted(variants), evaluators_fingerprint(spec), stats):
        return stats
    cases = CaseIndex(run_dir.cases)
    fd, tmp_name = tempfile.mkstemp(dir=run_dir.path, prefix=".results.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    progress.start("results", None)
    try:
        # A temp file published by rename: no need for the per-line durability of traces.
        with tmp.open("w", encoding="utf-8", buffering=1 << 20) as out:
            async def judge(trace: Trace) -> None:
                for result in await judge_trace(evaluators, cases.get(trace.case_id), trace):
                    out.write(result.model_dump_json() + "\n")
                    stats.count(result)
                stats.traces += 1
                progress.advance("results")

            traces = (
                t for t in iter_records(run_dir.traces, Trace, "trace")
                if t.variant_name in variants and not (t.error and t.error.type in UNJUDGED_ERRORS)
            )
            await run_bounded(traces, judge, concurrency)
        selected = {e.name for e in evaluators} if evaluator_names is not None else None
        _replace_results(run_dir, tmp, variants, selected)
    finally:
        tmp.unlink(missing_ok=True)
        cases.close()
    progress.finish("results")
    return stats


def _replace_results(run_dir: RunDirectory, new: Path, variants: set[str], evaluators: set[str] | None) -> None:
    """results.jsonl := (old lines outside the re-judged slice) + new lines, atomically."""
    with locked(run_dir.lock):
        fd, merged_name = tempfile.mkstemp(dir=run_dir.path, prefix=".results.merge.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as merged:
                for _, line in iter_lines(run_dir.results):
                    variant, evaluator = _slice_key(line)
                    if not (variant in variants and (evaluators is None or evaluator in evaluators)):
                        merged.write(line)
                with new.open("r", encoding="utf-8") as fresh:
                    for line in fresh:
                        merged.write(line)
            os.replace(merged_name, run_dir.results)
        except BaseException:
            Path(merged_name).unlink(missing_ok=True)
            raise


async def judge_trace(
    evaluators: list[Evaluator], case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None = None
) -> list[EvaluationResult]:
    """Every evaluator's result for one trace; cells that never ran get none."""
    if trace.error is not None and trace.error.type in UNJUDGED_ERRORS:
        return []
    return [await _judge_one(evaluator, case, trace, artifact) for evaluator in evaluators]


class InlineResults:
    """Results judged right after each trace of a fresh run is persisted.

    Judging while the systems are busy overlaps the two; the results stay in a staging
    file that the results stage adopts only if the evaluator config is unchanged and
    every trace was judged. The trace is always on disk before its evaluators run.
    """

    def __init__(self, spec: EvalSpec, run_dir: RunDirectory, variants: list[str]) -> None:
        self.evaluators = build_evaluators(spec)
        self.run_dir = run_dir
        self.meta = {"fingerprint": evaluators_fingerprint(spec), "variants": sorted(variants)}
        self.stats = EvaluationStats()
        self._slice = sorted(variants)
        self._out = _inline_path(run_dir, self._slice).open("w", encoding="utf-8", buffering=1 << 20)

    async def judge(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None = None) -> None:
        for result in await judge_trace(self.evaluators, case, trace, artifact):
            self._out.write(result.model_dump_json() + "\n")
            self.stats.count(result)
        self.stats.traces += 1

    def close(self, complete: bool) -> None:
        """Publish the staged results (``complete``) or throw them away."""
        self._out.close()
        if not complete:
            _discard_inline(self.run_dir, self._slice)
            return
        # The traces file as judged: any later change to it voids the staged results.
        meta = {**self.meta, "traces_bytes": self.run_dir.traces.stat().st_size, "stats": asdict(self.stats)}
        write_atomic(_inline_meta_path(self.run_dir, self._slice), json.dumps(meta))


def adopt_inline_results(run_dir: RunDirectory, variants: list[str], fingerprint: str, stats: EvaluationStats) -> bool:
    """Move staged inline results into results.jsonl if they match this evaluation exactly."""
    meta_path = _inline_meta_path(run_dir, variants)
    if not meta_path.exists():
        _discard_inline(run_dir, variants)
        return False
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    traces_bytes = run_dir.traces.stat().st_size if run_dir.traces.exists() else -1
    if (meta.get("fingerprint"), meta.get("variants"), meta.get("traces_bytes")) != (fingerprint, variants, traces_bytes):
        _discard_inline(run_dir, variants)
        return False
    _replace_results(run_dir, _inline_path(run_dir, variants), set(variants), None)
    _discard_inline(run_dir, variants)
    for key, value in meta["stats"].items():
        setattr(stats, key, value)
    return True


def _inline_path(run_dir: RunDirectory, variants: list[str]) -> Path:
    # One staging file per variant slice, so concurrent passes over other variants never collide.
    key = hashlib.sha256("\0".join(variants).encode()).hexdigest()[:12]
    return run_dir.path / f".results.inline.{key}.jsonl"


def _inline_meta_path(run_dir: RunDirectory, variants: list[str]) -> Path:
    return _inline_path(run_dir, variants).with_suffix(".json")


def _discard_inline(run_dir: RunDirectory, variants: list[str]) -> None:
    _inline_meta_path(run_dir, variants).unlink(missing_ok=True)
    _inline_path(run_dir, variants).unlink(missing_ok=True)


# The prefix every 1.x writer (this one and eval-harness) puts first. Names with escapes
# or other layouts do not match and fall back to json.
_PREFIX = re.compile(
    r'\{"schema_version":"[^"\\]*","run_id":"[^"\\]*","case_id":"[^"\\]*",'
    r'"variant_name":"([^"\\]*)",(?:"sample":\d+,)?"evaluator":"([^"\\]*)"'
)


def _slice_key(line: str) -> tuple[str, str]:
    """(variant_name, evaluator) of a result line without parsing all of it."""
    match = _PREFIX.match(line)
    if match:
        return match.group(1), match.group(2)
    record = json.loads(line)
    return record["variant_name"], record["evaluator"]


async def _judge_one(
    evaluator: Evaluator, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None
) -> EvaluationResult:
    started = datetime.now(timezone.utc)
    error = None
    try:
        verdict = await evaluator.evaluate(case, trace, artifact)
    except Exception as exc:  # noqa: BLE001 - one evaluator failing never stops the others
        verdict = Verdict(False, f"evaluator {evaluator.name!r} raised {type(exc).__name__}: {exc}")
        error = TraceError(type="exception", message=f"{type(exc).__name__}: {exc}", stack=traceback.format_exc(limit=20))
    finished = datetime.now(timezone.utc)
    return EvaluationResult(
        run_id=trace.run_id,
        case_id=trace.case_id,
        variant_name=trace.variant_name,
        sample=trace.sample,
        evaluator=evaluator.name,
        evaluator_type=evaluator.type_name,
        passed=verdict.passed and error is None,
        score=verdict.score,
        reason=verdict.reason,
        detail=verdict.detail,
        started_at=started,
        finished_at=finished,
        latency_ms=round((finished - started).total_seconds() * 1000),
        error=error,
    )
