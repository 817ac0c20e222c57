"""Results judged while a fresh run is still calling its systems, staged until adopted.

The staged results are adopted by the results stage only if the evaluator config is
unchanged and the traces file is exactly the one judged; otherwise they are discarded
and the traces are judged again.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace
from evalh_pipeline.runner.judging import (
    EvaluationStats,
    build_evaluators,
    count_judged,
    evaluators_fingerprint,
    judge_all,
    judgements_of,
    slices_of,
)
from evalh_pipeline.runner.result_lines import result_lines
from evalh_pipeline.store.result_slices import traces_identity
from evalh_pipeline.store.results_file import replace_results
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic


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
        self._out = run_dir.inline_results(self._slice)[0].open("wb", buffering=1 << 20)

    async def judge(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None = None) -> None:
        judged = await judge_all(self.evaluators, case, trace, artifact)
        self._out.write(result_lines(trace, judged))
        count_judged(self.stats, trace, judged)

    def close(self, complete: bool) -> None:
        """Publish the staged results (``complete``) or throw them away."""
        self._out.close()
        if not complete:
            _discard_inline(self.run_dir, self._slice)
            return
        # The traces file as judged: any later change to it voids the staged results.
        meta = {**self.meta, "traces_bytes": self.run_dir.traces.stat().st_size, "stats": asdict(self.stats)}
        write_atomic(self.run_dir.inline_results(self._slice)[1], json.dumps(meta))


def adopt_inline_results(run_dir: RunDirectory, variants: list[str], fingerprint: str, stats: EvaluationStats,
                         hashes: dict[str, str] | None = None) -> bool:
    """Move staged inline results into results.jsonl if they match this evaluation exactly."""
    staged, meta_path = run_dir.inline_results(variants)
    if not meta_path.exists():
        _discard_inline(run_dir, variants)
        return False
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    traces_bytes = run_dir.traces.stat().st_size if run_dir.traces.exists() else -1
    if (meta.get("fingerprint"), meta.get("variants"), meta.get("traces_bytes")) != (fingerprint, variants, traces_bytes):
        _discard_inline(run_dir, variants)
        return False
    for key, value in meta["stats"].items():
        setattr(stats, key, value)
    identity = traces_identity(run_dir.traces)
    judged = judgements_of(stats, hashes or {}, identity) if identity is not None else None
    replace_results(run_dir, staged, set(variants), None, slices_of(meta["stats"]["by_variant"]), judged)
    _discard_inline(run_dir, variants)
    return True


def _discard_inline(run_dir: RunDirectory, variants: list[str]) -> None:
    for path in reversed(run_dir.inline_results(variants)):  # the meta first: it vouches for the results
        path.unlink(missing_ok=True)
