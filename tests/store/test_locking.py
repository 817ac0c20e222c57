"""The run directory lock handed from a command to the recorder it forked (store/locking.py)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from evalh_pipeline.store.locking import RunDirectoryBusy, hold_run_directory

pytestmark = pytest.mark.integration  # processes that import this project

HAND_OVER = """
import os, sys, time
from pathlib import Path
from evalh_pipeline.store.locking import hand_over_to_recorder, hold_run_directory

run_dir = Path(sys.argv[1])
with hold_run_directory(run_dir, "evalh re-evaluate"):
    pid = os.fork()
    if pid == 0:
        # As the recorder does: not the command's output, which its caller reads to the end.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        time.sleep(float(sys.argv[2]))
        os._exit(0)
    hand_over_to_recorder(run_dir, pid, "evalh re-evaluate")
print(pid, flush=True)
"""

HOLD = """
import sys, time
from pathlib import Path
from evalh_pipeline.store.locking import hold_run_directory

with hold_run_directory(Path(sys.argv[1]), "evalh run --resume"):
    print("held", flush=True)
    time.sleep(30)
"""


def test_a_handed_over_lock_stays_held_after_the_command_exits_and_is_waited_for(tmp_path):
    command = subprocess.run([sys.executable, "-c", HAND_OVER, str(tmp_path), "1.5"], capture_output=True,
                             text=True, timeout=60, check=True)
    recorder = command.stdout.strip()
    started = time.monotonic()
    waits: list[str] = []
    with hold_run_directory(tmp_path, "evalh re-evaluate", on_wait=waits.append):
        waited = time.monotonic() - started
    assert waited >= 0.5  # the command has exited: the recorder kept the lock until it exited
    assert len(waits) == 1 and f"pid {recorder}: recording the Dagster run of evalh re-evaluate" in waits[0]


def test_a_lock_held_by_a_command_that_is_not_a_recorder_is_refused_at_once(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(RunDirectoryBusy, match="being written by another process .*evalh run --resume"):
            with hold_run_directory(tmp_path, "evalh re-evaluate", on_wait=pytest.fail):
                pass
        assert time.monotonic() - started < 5
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_is_free_again_once_the_command_releases_it(tmp_path):
    with hold_run_directory(tmp_path, "first"):
        with hold_run_directory(tmp_path, "nested in the same command"):
            pass
    with hold_run_directory(tmp_path, "second"):
        assert (tmp_path / ".lock.owner").read_text().count('"second"') == 1


def test_without_flock_the_lease_still_excludes_other_processes_and_the_stages_reenter_it(tmp_path, monkeypatch):
    from evalh_pipeline.store import locking

    monkeypatch.setattr(locking, "fcntl", None)  # as on Windows
    with hold_run_directory(tmp_path, "evalh re-evaluate"):
        with locking.locked(tmp_path / ".lock"):  # a stage of the same command
            pass
        other = subprocess.run([sys.executable, "-c", HOLD, str(tmp_path)], capture_output=True, text=True,
                               timeout=60)
        assert other.returncode == 1 and "being written by another process" in other.stderr
        assert "evalh re-evaluate" in other.stderr
    with hold_run_directory(tmp_path, "again"):
        pass
