"""Judge self-consistency: judge every trace of a run K times with each judge and count the
cells whose K verdicts were not all equal (``evalh re-evaluate RUN --repeat-judging K``).

A measurement of the judge, written to the run's ``judge_consistency.jsonl`` (one
JudgeConsistency line per evaluator, replaced as a whole): results.jsonl, the store and the
summary are never touched, and the system is never called (only saved traces are judged).

Only evaluators that call a model (``Evaluator.calls_model``: ``llm_judge``,
``openai_model_graded``, ``thinking_does_not_leak`` with a ``judge:`` block, and case
evaluators of those types) are repeated; the others are deterministic (a flip rate of 0 by
construction) and are listed as skipped. A judge's response cache (``cache: true``) would
answer every repeat with the first verdict, so it is bypassed for the repeats: every repeat
is a real call. A cell whose system call failed has no answer to judge and is left out, as
is a cell where some repeat could not give a verdict (counted as ``errored``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.evaluators.base import Evaluator
from evalh_pipeline.models import FlippingCell, JudgeConsistency, Trace
from evalh_pipeline.runner.case_evaluators import for_case
from evalh_pipeline.runner.judging import build_evaluators, judge_one
from evalh_pipeline.runner.pool import run_bounded
from evalh_pipeline.runner.rate_limits import run_rate_limits
from evalh_pipeline.stats.proportions import wilson_interval
from evalh_pipeline.store.case_index import CaseIndex
from evalh_pipeline.store.jsonl import iter_raw_lines
from evalh_pipeline.store.records import TRACES
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic
from evalh_pipeline.workspaces.artifacts import ArtifactLoader

#: Why a deterministic evaluator is not repeated (its JudgeConsistency.skipped).
DETERMINISTIC = "deterministic (calls no model): the same trace always gets the same verdict, flip rate 0 by construction"

Cell = tuple[str, str, int]  # case id, variant, sample


async def measure_judge_consistency(spec: EvalSpec, run_dir: RunDirectory, repeats: int, *,
                                    max_concurrency: int | None = None) -> list[JudgeConsistency]:
    """Judge each trace of ``run_dir`` ``repeats`` times with every judge of ``spec`` (and of
    the run's cases), write ``judge_consistency.jsonl`` and return its lines, in the order of
    the evaluators. The caller holds the run's lock."""
    if repeats < 2:
        raise ValueError(f"--repeat-judging needs K >= 2 (got {repeats}): one judgement per cell cannot flip")
    evaluators = build_evaluators(spec, rate_limits=run_rate_limits(spec, run_dir, max_concurrency), cases=run_dir.cases)
    verdicts: dict[str, dict[Cell, list[str]]] = {e.name: {} for e in evaluators}
    judges: set[str] = set()
    cases = CaseIndex(run_dir.cases)
    artifacts = ArtifactLoader(spec, run_dir)

    async def judge(trace: Trace) -> None:
        case = cases.get(trace.case_id)
        artifact = artifacts.get(trace.case_id, trace.variant_name, trace.sample)
        cell = (trace.case_id, trace.variant_name, trace.sample)
        for evaluator in evaluators:
            member = for_case(evaluator, case)
            if member is None or not member.calls_model or cell in verdicts[evaluator.name]:
                continue  # no evaluator for this case, deterministic, or a repeated trace line
            judges.add(evaluator.name)
            member.bypass_cache()
            said = verdicts[evaluator.name][cell] = []
            for _ in range(repeats):
                judged = await judge_one(member, case, trace, artifact)
                said.append("error" if judged.error is not None else "pass" if judged.verdict.passed else "fail")

    try:
        await run_bounded(_answered(run_dir.traces), judge, max_concurrency or spec.config.run.max_concurrency)
    finally:
        cases.close()
    measured_at = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
    # A case evaluator group is a judge when a member it judged with calls a model.
    lines = [_consistency(e, repeats, verdicts[e.name], measured_at, judge=e.name in judges or e.calls_model)
             for e in evaluators]
    write_atomic(run_dir.judge_consistency, "".join(line.model_dump_json() + "\n" for line in lines))
    return lines


def _answered(traces: Path) -> Iterator[Trace]:
    """The traces with an answer to judge (a failed system call has none)."""
    for number, line in iter_raw_lines(traces):
        trace = TRACES.decode(line, traces, number)
        if trace.error is None:
            yield trace


def _consistency(evaluator: Evaluator, repeats: int, cells: dict[Cell, list[str]], measured_at: str, *,
                 judge: bool) -> JudgeConsistency:
    """One evaluator's line: its cells, flips and flip rate with a 95 % Wilson interval."""
    if not judge:
        return JudgeConsistency(evaluator=evaluator.name, repeats=repeats, skipped=DETERMINISTIC,
                                measured_at=measured_at)
    complete = {cell: said for cell, said in cells.items() if "error" not in said}
    flipping = [FlippingCell(case_id=cell[0], variant_name=cell[1], sample=cell[2], verdicts=dict(Counter(said)))
                for cell, said in sorted(complete.items()) if len(set(said)) > 1]
    interval = wilson_interval(len(flipping), len(complete))
    return JudgeConsistency(
        evaluator=evaluator.name, repeats=repeats, cells=len(complete), flips=len(flipping),
        flip_rate=len(flipping) / len(complete) if complete else None,
        ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None,
        errored=len(cells) - len(complete), flipping=flipping, measured_at=measured_at)
