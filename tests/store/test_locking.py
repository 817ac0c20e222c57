"""The run directory lock (store/locking.py): one writing command per run directory."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from evalh_pipeline.store.locking import RunDirectoryBusy, hold_run_directory

pytestmark = pytest.mark.integration  # processes that import this project

HOLD = """
import sys
from pathlib import Path
from evalh_pipeline.store.locking import hold_run_directory

with hold_run_directory(Path(sys.argv[1]), "evalh run --resume"):
    print("held", flush=True)
    sys.stdin.read()  # held until the test closes our stdin (or kills us)
"""


def test_a_lock_held_by_another_command_is_refused_at_once_naming_it(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(RunDirectoryBusy, match="being written by another process .*evalh run --resume"):
            with hold_run_directory(tmp_path, "evalh re-evaluate"):
                pass
        assert time.monotonic() - started < 30  # refused, not queued behind the holder (who never lets go)
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_is_free_again_once_the_command_releases_it(tmp_path):
    with hold_run_directory(tmp_path, "first"):
        with hold_run_directory(tmp_path, "nested in the same command"):
            pass
    with hold_run_directory(tmp_path, "second"):
        assert (tmp_path / ".lock.owner").read_text().count('"second"') == 1
