"""`evalh retry-failed`: forget the traces of failed cells so the trace stage runs them again.

The trace stage runs exactly the cells that have no trace (the resume rule), so retrying
a cell is removing its trace line; rematerializing the run then calls the system for
those cells only, re-judges the run's variants from the traces (which replaces their
results whole) and rewrites the summary. Nothing is appended twice: each cell still has
exactly one trace, and its results are those of the new trace.
"""

from __future__ import annotations

import json
import os
from typing import Any

from evalh_pipeline.models import NOT_JUDGED_ERRORS
from evalh_pipeline.runner.cells import CellKey
from evalh_pipeline.store.jsonl import iter_lines, set_aside_torn_tail
from evalh_pipeline.runner.shards import collect_traces
from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.records import TRACES, RecordCodec
from evalh_pipeline.store.run_dir import RunDirectory


def _key(record: dict[str, Any]) -> CellKey:
    return (record["case_id"], record["variant_name"], int(record.get("sample") or 0))


def _line_key(codec: RecordCodec[Any], line: str) -> CellKey:
    case_id, variant, sample = codec.read_fields(line, "case_id", "variant_name", "sample")
    return (case_id, variant, int(sample or 0))


def failed_cells(run_dir: RunDirectory, *, include_evaluator_failures: bool = False) -> set[CellKey]:
    """Cells whose trace has an error; with ``include_evaluator_failures``, also cells where
    any evaluator result has ``error`` set (an evaluator that raised, not one that failed).

    A result that could not be judged (its judge unreachable: NOT_JUDGED_ERRORS) needs no new
    trace: the evaluation judges it again from the saved one (runner/evaluation.py), so it
    does not make its cell one to run again."""
    failed = {_key(t) for t in map(json.loads, (line for _, line in iter_lines(run_dir.traces))) if t.get("error")}
    if include_evaluator_failures:
        traced = {_line_key(TRACES, line) for _, line in iter_lines(run_dir.traces)}
        for _, line in iter_lines(run_dir.results):
            result = json.loads(line)
            error = result.get("error")
            if error and error.get("type") not in NOT_JUDGED_ERRORS and _key(result) in traced:
                failed.add(_key(result))
    return failed


def not_judged_results(run_dir: RunDirectory) -> int:
    """How many of the run's results could not be judged (re-judged by the next evaluation)."""
    return sum(1 for _, line in iter_lines(run_dir.results)
               if ((json.loads(line).get("error") or {}).get("type") in NOT_JUDGED_ERRORS))


def drop_traces(run_dir: RunDirectory, cells: set[CellKey]) -> int:
    """Remove the trace lines of ``cells`` from traces.jsonl, atomically; returns how many.

    The file is rewritten to a temp file and renamed over the old one while holding the
    run directory's lock. No trace producer may be appending to the run meanwhile (a
    concurrent `evalh run --resume` of the same run would lose its appends).
    """
    if not cells or not run_dir.traces.exists():
        return 0
    removed = 0
    with locked(run_dir.lock):
        set_aside_torn_tail(run_dir.traces)  # kept in traces.jsonl.torn, not lost with the rewrite
        tmp_name = run_dir.temp_file("traces.retry")
        try:
            with tmp_name.open("w", encoding="utf-8") as kept:
                for _, line in iter_lines(run_dir.traces):
                    if _line_key(TRACES, line) in cells:
                        removed += 1
                    else:
                        kept.write(line)
            os.chmod(tmp_name, run_dir.traces.stat().st_mode & 0o777)
            os.replace(tmp_name, run_dir.traces)
        except BaseException:
            tmp_name.unlink(missing_ok=True)
            raise
    return removed


def prepare_retry(run_dir: RunDirectory, *, include_evaluator_failures: bool = False) -> int:
    """Drop the traces of the run's failed cells; returns the number of cells to retry."""
    collect_traces(run_dir)  # the traces of an interrupted sharded pass, into traces.jsonl first
    cells = failed_cells(run_dir, include_evaluator_failures=include_evaluator_failures)
    drop_traces(run_dir, cells)
    return len(cells)
