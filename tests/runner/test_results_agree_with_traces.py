"""Results always agree with their traces (issue 24): a differential property test.

Random sequences of what happens to a run folder (runs killed at random points, torn tails,
``--resume``, ``retry-failed``, evaluator edits, ``re-evaluate`` with and without ``--all``,
re-evaluations killed mid-write, the folder copied elsewhere, a trace edited by hand) are
played on the engine's functions; after every re-evaluation the results equal a full
re-judge of the traces on disk, cell for cell and evaluator for evaluator, and every result
records the trace_hash of its trace's line.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.retry import prepare_retry
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store import results_store
from evalh_pipeline.store.jsonl import JsonlAppender, iter_raw_lines
from evalh_pipeline.store.records import TRACES
from evalh_pipeline.store.run_dir import RunDirectory, new_run_id
from tests.support.evals import write_eval

EVALUATORS = """
  - name: mentions_paris
    type: contains_text
  - name: says_answer
    type: regex_match
    config: {pattern: "answer"}
  - name: fast
    type: latency_under
    config: {max_ms: 60000}
"""
# The evaluator edit a sequence may make, and back.
EDITED = EVALUATORS.replace('pattern: "answer"', 'pattern: "Paris"')
# What a sequence may do to the run, each drawn with its parameters.
STEPS = ("kill_run", "tear", "resume", "retry_failed", "edit_evaluator", "re_evaluate", "re_evaluate_all",
         "kill_re_evaluate", "copy", "edit_trace")


class _Killed(Exception):
    """Stands for the process being killed at that point."""


def _results(run_dir: RunDirectory) -> Counter[tuple]:
    """The results on disk, as what decides a cell's verdict (timestamps aside)."""
    found: Counter[tuple] = Counter()
    for _, line in iter_raw_lines(run_dir.results):
        r = json.loads(line)
        found[(r["case_id"], r["variant_name"], r["sample"], r["evaluator"], r["evaluator_hash"], r["trace_hash"],
               r["passed"], r["score"], r["reason"], json.dumps(r["detail"], sort_keys=True))] += 1
    return found


def _full_rejudge(spec, run_dir: RunDirectory, scratch: Path) -> Counter[tuple]:
    """A from-scratch judging of the traces on disk (no store, nothing staged), on a copy."""
    copy = RunDirectory(scratch / "oracle" / run_dir.run_id)
    shutil.rmtree(copy.path.parent, ignore_errors=True)
    copy.path.mkdir(parents=True)
    for name in (run_dir.meta, run_dir.config_yaml, run_dir.cases, run_dir.traces):
        if name.exists():
            shutil.copy(name, copy.path / name.name)
    asyncio.run(evaluate_traces(spec, copy, incremental=False))
    return _results(copy)


def _check(spec, run_dir: RunDirectory, scratch: Path) -> None:
    incremental = _results(run_dir)
    assert incremental == _full_rejudge(spec, run_dir, scratch)
    traces = {}
    for _, line in iter_raw_lines(run_dir.traces):
        t = json.loads(line)
        traces.setdefault((t["case_id"], t["variant_name"], t.get("sample", 0)), set()).add(TRACES.content_hash(line))
    for key in incremental:
        assert key[5] in traces[key[:3]], f"{key[:4]} records a trace_hash its cell's trace does not have"


def _tear(run_dir: RunDirectory, fraction: float) -> None:
    """Cut traces.jsonl at a point inside its last lines, as a kill mid-write (or a full disk) leaves it."""
    data = run_dir.traces.read_bytes() if run_dir.traces.exists() else b""
    if data:
        cut = len(data) - max(1, int(len(data) * fraction * 0.3))
        run_dir.traces.write_bytes(data[:cut] if data[cut - 1:cut] != b"\n" else data[:cut] + b'{"schema_ver')


def _killed_after(monkeypatch: pytest.MonkeyPatch, target, name: str, calls: int) -> None:
    original = getattr(target, name)
    count = [0]

    def dies(*args, **kwargs):
        count[0] += 1
        if count[0] > calls:
            raise _Killed(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, dies)


# A step and the number it draws (how many cells a kill lets through, where a tear cuts...).
SEQUENCES = st.lists(st.tuples(st.sampled_from(STEPS), st.integers(0, 99)), min_size=2, max_size=7)


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(SEQUENCES)
# The user path of issue 24: a run cut mid-write, re-evaluated, resumed.
@example([("resume", 0), ("tear", 40), ("re_evaluate", 0), ("resume", 0)])
@example([("kill_run", 3), ("re_evaluate", 0), ("tear", 90), ("resume", 0), ("edit_evaluator", 0)])
@example([("resume", 0), ("re_evaluate", 0), ("copy", 0), ("edit_trace", 5), ("retry_failed", 0)])
@example([("kill_run", 5), ("kill_re_evaluate", 2), ("tear", 10), ("re_evaluate_all", 0), ("resume", 0)])
def test_incremental_results_equal_a_full_rejudge_after_any_sequence(steps):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        eval_yaml = write_eval(root / "toy", cases=4, evaluators=EVALUATORS)
        spec = load_eval(eval_yaml)
        run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
        edited = False
        for step, number in [*steps, ("re_evaluate", 0)]:
            if step == "kill_run":  # a fresh or resumed run killed after some cells
                with pytest.MonkeyPatch.context() as dying:
                    _killed_after(dying, JsonlAppender, "write", number % 7)
                    try:
                        asyncio.run(produce_traces(spec, run_dir))
                    except _Killed:
                        pass
            elif step == "tear":
                _tear(run_dir, (number + 1) / 100)
            elif step == "resume":
                asyncio.run(produce_traces(spec, run_dir))
            elif step == "retry_failed":
                prepare_retry(run_dir)
                asyncio.run(produce_traces(spec, run_dir))
            elif step == "edit_evaluator":
                edited = not edited
                spec = load_eval(write_eval(root / "toy", cases=4, evaluators=EDITED if edited else EVALUATORS))
            elif step in ("re_evaluate", "re_evaluate_all"):
                asyncio.run(evaluate_traces(spec, run_dir, incremental=step == "re_evaluate"))
                _check(spec, run_dir, root)
            elif step == "kill_re_evaluate":  # killed between any two renames of the store's files
                with pytest.MonkeyPatch.context() as dying:
                    _killed_after(dying, results_store.os, "replace", number % 5)
                    try:
                        asyncio.run(evaluate_traces(spec, run_dir))
                    except _Killed:
                        pass
            elif step == "copy":  # moved or synced elsewhere: new inodes and times, the same contents
                copy = RunDirectory(root / f"copy{len(list(root.glob('copy*')))}" / run_dir.run_id)
                shutil.copytree(run_dir.path, copy.path)
                run_dir = copy
            elif step == "edit_trace":  # a hand edit that leaves the line's recorded trace_hash as it was
                lines = run_dir.traces.read_bytes().splitlines(keepends=True) if run_dir.traces.exists() else []
                complete = [i for i, line in enumerate(lines) if line.endswith(b"\n")]
                if complete:
                    i = complete[number % len(complete)]
                    lines[i] = lines[i].replace(b"Paris", b"Lyon")
                    run_dir.traces.write_bytes(b"".join(lines))
