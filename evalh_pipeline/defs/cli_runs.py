"""The Dagster runs `evalh` executes in its own process, and ending those whose evalh died.

`evalh` executes each job in process (defs/launch.py): no run launcher started it and no run
worker runs it, so Dagster's run monitoring cannot see that process die (SIGKILL, out of
memory, a closed laptop), and its run would stay "in progress" in the UI. While it executes a
run, the process holds that run's lease: a lock file named for the Dagster run id in the
instance folder, taken before the run is recorded and released after its end is recorded.
The operating system releases it when the process dies, whatever ends it. A lease that can
be taken is the evidence that no process executes the run any more; a PID would not be (PIDs
are reused). A CLI run still recorded in progress whose lease can be taken is marked failed,
saying so and which command finishes the eval run. Two places do it: the code location's
``evalh_abandoned_cli_runs`` sensor (under the daemon: within a minute of the death), and
every `evalh` command that resumes or re-judges the run, before it starts. The sensor
leaves alone a run whose lease it does not find: executed where this instance folder is
not seen (another machine sharing the run storage), it may well be alive.

The run directory's lock is not that evidence: a new `evalh run` holds it only while a step
writes (not while its `cases` step builds the directory, nor between steps). Only the CLI's
runs are looked at: a run the UI, a sensor or a backfill launched has a run worker, which
the daemon's run monitoring watches. A re-execution from the UI of a CLI run carries the
parent's ``evalh/trigger=cli`` tag (Dagster copies the parent's tags) but has a parent,
which a CLI run never has: it is the daemon's, and left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from filelock import FileLock, Timeout

from evalh_pipeline.defs.evals.names import (
    ABANDONED_RUNS_SENSOR,
    EVAL_FILE_TAG,
    EVAL_TAG,
    PARTITION_TAG,
    RUN_DIR_TAG,
    TRIGGER_TAG,
)
from evalh_pipeline.store.run_dir import RunDirectory

# A run whose evalh died is marked failed within about 15 s (one interval, plus the sensor
# daemon's own 5 s loop). An evaluation is one query of the CLI runs in progress and a lock
# probe per run, cheap enough to look this often.
ABANDONED_INTERVAL_SECONDS = 10
IN_PROGRESS = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
               dg.DagsterRunStatus.CANCELING]
ENDED_WITHOUT_FINISHING = "the evalh process that ran this ended without finishing it (killed?)"


def lease_path(instance: dg.DagsterInstance, dagster_run_id: str) -> Path:
    """Where the lease of the CLI run ``dagster_run_id`` is (a killed evalh leaves it, free)."""
    return Path(instance.root_directory) / "evalh" / "cli_runs" / f"{dagster_run_id}.lock"


@contextmanager
def executing(instance: dg.DagsterInstance, dagster_run_id: str) -> Iterator[None]:
    """Hold the lease of the CLI run ``dagster_run_id`` while this process executes it.

    Enter it before the run is recorded and leave it after its end is: a run recorded in
    progress whose lease is free then has no process executing it."""
    with _lease(instance, dagster_run_id, if_missing=True) as held:
        if not held:  # a new uuid: nobody else has it
            raise RuntimeError(f"the lease of Dagster run {dagster_run_id} is held by another process")
        yield


@contextmanager
def _lease(instance: dg.DagsterInstance, dagster_run_id: str, *, if_missing: bool) -> Iterator[bool]:
    """Take the run's lease for the block if no process holds it (True), else False at once.

    ``if_missing=False``: a lease that is not there is not taken either (False). It exists
    from before the run is recorded until after its end is, and a killed evalh leaves it:
    missing, the run was executed where this instance folder is not seen (another machine
    on shared run storage) or by an evalh from before leases, and nothing here can tell."""
    path = lease_path(instance, dagster_run_id)
    if not if_missing and not path.exists():
        yield False
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    # A lock object of its own: a holder in this same process (another thread) refuses it too.
    lock = FileLock(str(path), thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        yield False
        return
    try:
        yield True
    finally:
        # Removed while still held: a process that opened it meanwhile finds an unlinked file
        # and opens a new one (filelock); a run's lease is never needed once it has ended.
        path.unlink(missing_ok=True)
        lock.release()


def end_abandoned_runs(instance: dg.DagsterInstance, tags: dict[str, str],
                       message: Callable[[dg.DagsterRun], str], *, missing_lease_is_free: bool) -> list[str]:
    """Mark failed the CLI runs matching ``tags`` still recorded in progress whose evalh died
    (their lease is free); returns their Dagster run ids. ``message(run)`` says what to do.

    ``missing_lease_is_free``: also those whose lease is not there, for a caller that has
    other evidence (a command holding the run directory's lock, which every command that
    works on a run holds)."""
    ended = []
    for run in instance.get_runs(dg.RunsFilter(tags={**tags, TRIGGER_TAG: "cli"}, statuses=IN_PROGRESS)):
        if run.parent_run_id is not None:  # a re-execution from the UI: the daemon's
            continue
        with _lease(instance, run.run_id, if_missing=missing_lease_is_free) as free:
            if not free:
                continue  # its evalh is executing it
            # Read again under the lease: the evalh may have recorded the end and let go since
            # the runs were listed; no process can record anything for it now.
            current = instance.get_run_by_id(run.run_id)
            if current is None or current.status not in IN_PROGRESS:
                continue
            instance.report_run_failed(current, f"{ENDED_WITHOUT_FINISHING}; {message(current)}")
            ended.append(run.run_id)
    return ended


def finishing_command(run: dg.DagsterRun) -> str:
    """What finishes the eval run of an abandoned CLI run: the command to run, in one line."""
    eval_name = run.tags.get(EVAL_TAG, "<eval>")
    eval_file = run.tags.get(EVAL_FILE_TAG) or f"<{eval_name}'s eval file>"
    run_dir = run.tags.get(RUN_DIR_TAG) or f"<{eval_name}'s runs folder>/{run.tags.get(PARTITION_TAG, '<run id>')}"
    if run.job_name.endswith("__judge"):
        return f"finish the eval run with: evalh re-evaluate {run_dir}"
    if run.job_name.endswith("__promote"):
        return f"promote it again with: evalh promote {run_dir}"
    # A run published to a URL (its tag is the URL) is finished from it on any machine.
    if RUN_DIR_TAG in run.tags and "://" not in run_dir and not RunDirectory(Path(run_dir)).exists():
        # Killed while `cases` built the run directory: nothing of it was published.
        return f"its run directory {run_dir} was never written; start a new run with: evalh run {eval_file}"
    return f"finish the eval run with: evalh run {eval_file} --resume {run_dir}"


def build_abandoned_runs_sensor() -> dg.SensorDefinition:
    """``evalh_abandoned_cli_runs``: mark failed, within about 15 s, the CLI runs whose evalh died."""

    @dg.sensor(
        name=ABANDONED_RUNS_SENSOR,
        minimum_interval_seconds=ABANDONED_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=(
            "Mark failed the runs that `evalh` executes in its own process (tag `evalh/trigger=cli`) once that "
            "process has died (killed, out of memory) without recording their end, with the command that "
            "finishes the eval run. A live `evalh` holds a lease on its run; runs launched from the UI, sensors "
            "and re-executions are never touched. Starts nothing."
        ),
    )
    def abandoned_cli_runs(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        ended = end_abandoned_runs(context.instance, {}, finishing_command, missing_lease_is_free=False)
        if ended:
            return dg.SkipReason(f"marked failed {len(ended)} run(s) whose evalh ended without finishing them: "
                                 f"{', '.join(ended)}")
        return dg.SkipReason("no CLI run in progress without its evalh")

    return abandoned_cli_runs
