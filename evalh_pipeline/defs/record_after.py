"""`evalh re-evaluate` returns once its work is on disk; its Dagster run is recorded after.

Re-judging a run's traces takes the engine about a second; recording it as a Dagster run
takes Dagster two more here, whatever the run's size (importing Dagster, opening the
instance, creating the run, ~40 events each committed to its storage: benchmarks/README.md).
Overlapping the two (defs/overlap.py) still leaves the command waiting for Dagster. So this
command judges, summarizes, publishes, compares with the promoted baseline and judges the
gates itself (runner/gates.py: the same functions as the asset checks), prints them, and
forks a recorder that materializes ``<eval>__judge`` from that finished work. The recorder's
steps only report: each joins the value the engine computed (``Prestarted``), nothing is
published twice, and the checks report the verdicts the command printed. ``evalh promote``
records its Dagster run the same way (defs/record_promotion.py).

The recorder is forked after the work, so it has that work in memory; it starts its own
session (a terminal's Ctrl-C or hang-up is not for it) and writes its output to
``dagster-record.log`` in the run directory. The command hands it the run directory's lock
(store/locking.py): nothing writes the run until the record is made, and a command on the
same run waits for the recorder rather than refusing. ``--wait-for-dagster`` (or
``EVALH_WAIT_FOR_DAGSTER=1``) takes the overlapped path instead; a process where forking is
not safe (another thread runs, or not Linux) records before returning.

The CLI calls this only with the Dagster side's modules not imported; Dagster is imported
by the recorder.
"""

from __future__ import annotations

import asyncio
import os
import sys
import traceback
import uuid
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.defs.prestarted import Prestarted, fork_is_safe, require_dagster_home
from evalh_pipeline.defs.run_options import RunOptions, RunOutcome
from evalh_pipeline.runner.drift import write_drift
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.gates import DRIFT, SUMMARY, JudgedGate, RunFiles, blocked, judge_gates
from evalh_pipeline.runner.progress import NoProgress
from evalh_pipeline.runner.stages import run_variants, write_summary
from evalh_pipeline.store.locking import continue_in_forked_child, hand_over_to_recorder, held_locks
from evalh_pipeline.store.publishing import publish_run
from evalh_pipeline.store.run_dir import RunDirectory, run_directory

LOG_NAME = "dagster-record.log"
_RECORDED = "recorded the re-evaluation of "


def reevaluate_then_record(spec: EvalSpec, run_id: str, options: RunOptions, *, command: str) -> RunOutcome:
    """Re-judge ``run_id``'s traces, summarize, drift and gates here; the outcome's ``record()``
    then records the Dagster run: in a forked recorder, or at once where forking is not safe.
    Call it with no other thread running (a progress display's).

    ``command`` names the command for the run directory's owner note while it records."""
    require_dagster_home()  # the recorder's failure would only reach its log
    run_dir = run_directory(spec, run_id)
    handle = Prestarted(run_id=run_id, cases=None, traces=None, results=Future(), summary=Future(),
                        drift=Future(), published=True)
    judged = _judge(spec, run_dir, options, handle)
    dagster_run_id = str(uuid.uuid4())
    outcome = RunOutcome(run_dir=run_dir, summary=handle.summary.result(),  # type: ignore[union-attr]
                         dagster_run_ids=[dagster_run_id],
                         failed_checks=[j.label(spec.name) for j in judged if not j.verdict.passed])
    quiet = replace(options, progress=NoProgress())

    def record() -> bool:
        if not fork_is_safe():
            _record(spec, run_id, quiet, handle, dagster_run_id)
            return False
        _fork_recorder(spec, run_id, quiet, handle, dagster_run_id, run_dir, command)
        return True

    outcome.record = record
    return outcome


def record_log(run_dir: RunDirectory) -> Path:
    """Where the recorder of ``run_dir``'s last re-evaluation writes its output."""
    return run_dir.path / LOG_NAME


def take_failed_record(run_dir: RunDirectory) -> str | None:
    """Why the last recorder of ``run_dir`` did not record its run (its log's last line), if it
    failed or was killed; the log is removed, so it is said once. None: it recorded (or none ran)."""
    log = record_log(run_dir)
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return None
    if lines and lines[-1].startswith(_RECORDED):
        return None
    log.unlink(missing_ok=True)
    return lines[-1] if lines else "(empty log)"


def _judge(spec: EvalSpec, run_dir: RunDirectory, options: RunOptions, handle: Prestarted) -> list[JudgedGate]:
    """The judge job's work, in its order, each stage published as its step would."""
    stats = asyncio.run(evaluate_traces(
        spec, run_dir, run_variants(run_dir, spec), max_concurrency=options.max_concurrency,
        progress=options.progress, incremental=not options.rejudge_all))
    _done(handle.results, stats, spec, run_dir, "results")
    summary = write_summary(spec, run_dir)
    _done(handle.summary, summary, spec, run_dir, "summary")
    files = RunFiles(run_dir, summary)  # the gates read the summary just written, not its file
    judged = judge_gates(spec, files, SUMMARY)
    if blocked(spec, judged):
        # As in Dagster, a failed blocking gate stops the drift (its step does not run).
        handle.drift.set_exception(RuntimeError("drift not computed: a blocking gate failed"))  # type: ignore[union-attr]
    else:
        _done(handle.drift, write_drift(spec.name, run_dir, Path(spec.runs_root)), spec, run_dir, "drift")
        judged += judge_gates(spec, files, DRIFT)
    handle.gates = {j.gate.name: j.verdict for j in judged}
    return judged


def _done(future: Future | None, value: object, spec: EvalSpec, run_dir: RunDirectory, stage: str) -> None:
    publish_run(spec, run_dir, stage)  # a canonical failure raises; mirrors' failures are recorded
    assert future is not None
    future.set_result(value)


def _record(spec: EvalSpec, run_id: str, options: RunOptions, handle: Prestarted, dagster_run_id: str) -> None:
    from evalh_pipeline.defs.launch import local_instance, materialize_reevaluation

    materialize_reevaluation(spec, run_id, instance=local_instance(), runtime=options, prestarted=handle,
                             dagster_run_id=dagster_run_id)


def _fork_recorder(spec: EvalSpec, run_id: str, options: RunOptions, handle: Prestarted, dagster_run_id: str,
                   run_dir: RunDirectory, command: str) -> None:
    log = record_log(run_dir)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # or the child would print what is buffered a second time
    held = held_locks()
    read_end, write_end = os.pipe()
    first = os.fork()
    if first == 0:  # never returns into the caller's code
        code = 1
        try:
            os.close(read_end)
            # A second fork, so the recorder is nobody's child to reap (the caller may live on).
            os.setsid()
            if os.fork() != 0:
                code = 0
            else:
                os.write(write_end, str(os.getpid()).encode())
                os.close(write_end)
                code = _recorder(spec, run_id, options, handle, dagster_run_id, log, held)
        finally:
            os._exit(code)  # never the parent's atexit handlers or finalizers
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        recorder = pipe.read()
    os.waitpid(first, 0)
    if recorder and str((run_dir.path / ".lock").resolve()) in held:
        hand_over_to_recorder(run_dir.path, int(recorder), command)


def _recorder(spec: EvalSpec, run_id: str, options: RunOptions, handle: Prestarted, dagster_run_id: str,
              log: Path, held: frozenset[str]) -> int:
    """The recorder process: record the Dagster run; its exit code (its output is in ``log``)."""
    try:
        _redirect_output(log)
        continue_in_forked_child(held)
        _record(spec, run_id, options, handle, dagster_run_id)
        print(f"{_RECORDED}{run_id} as Dagster run {dagster_run_id}", flush=True)
        return 0
    except BaseException:  # noqa: BLE001 - the command has returned: the log is the only reader
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def _redirect_output(log: Path) -> None:
    """Standard streams of the recorder: nothing from the terminal, everything to ``log``."""
    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError:  # a read-only run directory: the record is still made, unlogged
        fd = os.open(os.devnull, os.O_WRONLY)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.close(devnull)


__all__ = ["LOG_NAME", "record_log", "reevaluate_then_record", "take_failed_record"]
