"""Results judged while a fresh run is still calling its systems, staged for the results stage.

Judging while the systems are busy overlaps the two. Each evaluator's results go to its
own staged file; every line records the hash of the trace line it judged and the
evaluator's config hash, like any result, so the results stage takes exactly those still
current (runner/evaluation.py) whatever happened since: a kill mid-run, a resume, a hand
edit. When the pass completes, ``meta.json`` records each file's content hash and the
digest of the traces they cover: while the traces and configs are unchanged, the results
stage moves the files into the results store as they are.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh_pipeline.common.ratelimits import RateLimits
from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace
from evalh_pipeline.runner.judging import EvaluationStats, build_evaluators, count_judged, judge_all
from evalh_pipeline.runner.result_lines import result_line_list, secrets_of
from evalh_pipeline.store.jsonl import FileDigest, iter_raw_lines
from evalh_pipeline.store.records import TRACES
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic

META = "meta.json"


class InlineResults:
    """Results judged right after each trace of a fresh run is written (to the traces
    appender, which may still buffer it: a result whose trace line a kill lost names a
    trace_hash no trace has, so it is never kept)."""

    def __init__(self, spec: EvalSpec, run_dir: RunDirectory, variants: list[str], *,
                 rate_limits: RateLimits | None = None) -> None:
        self.evaluators = build_evaluators(spec, rate_limits=rate_limits)
        self._secrets = secrets_of(self.evaluators)  # masked in every line; collected once, not per trace
        self.run_dir = run_dir
        self.stats = EvaluationStats()
        self.variants = sorted(variants)
        self.folder = run_dir.inline_results(self.variants)
        shutil.rmtree(self.folder, ignore_errors=True)  # a fresh pass: what an older one staged is not ours
        self.folder.mkdir()
        self._files = [self.folder / f"{index}.jsonl" for index in range(len(self.evaluators))]
        self._outs = [path.open("wb", buffering=1 << 20) for path in self._files]
        self._digests = [FileDigest() for _ in self.evaluators]
        self._counts = [0 for _ in self.evaluators]
        self._errors = [0 for _ in self.evaluators]

    async def judge(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None = None) -> None:
        """Judge one trace handed to the traces appender (its ``trace_hash``: that of its
        line as written)."""
        judged = await judge_all(self.evaluators, case, trace, artifact)
        trace_hash = trace.trace_hash or TRACES.content_hash(trace.model_dump_json())
        for index, (line, j) in enumerate(zip(result_line_list(trace, judged, self._secrets, trace_hash), judged)):
            self._outs[index].write(line)
            self._digests[index].update(line)
            self._counts[index] += 1
            self._errors[index] += j.error is not None
        count_judged(self.stats, trace, judged)

    def close(self, complete: bool, traces_digest: str) -> None:
        """Close the staged files; when the pass ``complete``d, record what they cover:
        ``traces_digest``, the digest of traces.jsonl's complete lines its appender kept ("":
        not known, nothing recorded). An incomplete pass leaves its files too: their results
        are still candidates."""
        for out in self._outs:
            out.close()
        if not complete or not traces_digest:
            return
        meta = {
            "variants": self.variants,
            "traces": traces_digest,
            "judged_traces": self.stats.traces,
            # Per evaluator: its file, what the file holds, and the verdicts counted (variant ->
            # [passed, judged]) for the results stage's counts.
            "evaluators": [[e.name, e.config_hash, path.name, digest.hexdigest(), count, errors,
                            {v: by[e.name] for v, by in self.stats.by_variant.items() if e.name in by}]
                           for e, path, digest, count, errors in zip(self.evaluators, self._files, self._digests,
                                                                      self._counts, self._errors)],
        }
        write_atomic(self.folder / META, json.dumps(meta))


@dataclass(frozen=True)
class StagedFile:
    """One evaluator's staged results, as a complete pass recorded them."""

    path: Path
    evaluator: str
    evaluator_hash: str | None
    digest: str
    count: int
    variants: list[str]
    traces: str
    errors: int  # its results that record an evaluator error
    tallies: dict[str, list[int]]  # variant -> [passed, judged]
    judged_traces: int  # traces the pass judged


def staged_files(run_dir: RunDirectory) -> list[StagedFile]:
    """The staged files of every complete pass (their ``meta.json`` says what they cover)."""
    found = []
    for folder in run_dir.staged_inline_results():
        try:
            meta: dict[str, Any] = json.loads((folder / META).read_text(encoding="utf-8"))
            for name, digest_of_config, file, digest, count, errors, tallies in meta["evaluators"]:
                path = folder / str(file)
                if path.is_file():
                    found.append(StagedFile(path, str(name), digest_of_config, str(digest), int(count),
                                            [str(v) for v in meta["variants"]], str(meta["traces"]), int(errors),
                                            {str(v): [int(p), int(j)] for v, (p, j) in tallies.items()},
                                            int(meta["judged_traces"])))
        except (OSError, ValueError, TypeError, KeyError):
            continue  # incomplete (or damaged): its lines are still read by staged_lines
    return found


def staged_lines(run_dir: RunDirectory) -> Iterator[bytes]:
    """Every complete line of every staged file, complete pass or not (candidate results)."""
    for folder in run_dir.staged_inline_results():
        for path in sorted(folder.glob("*.jsonl")):
            for _, line in iter_raw_lines(path):
                yield line


def discard_staged(run_dir: RunDirectory) -> None:
    """Remove every staged pass (the results stage took what was current of them)."""
    for folder in run_dir.staged_inline_results():
        shutil.rmtree(folder, ignore_errors=True)
