"""Celery worker processes for Dagster's celery executor, each as if on its own machine.

Every worker gets a temporary folder of its own (working directory, Dagster home with the
team's dagster.yaml, evalh cache with its working copies, the team's celery config module
``deploy/dagster_celery_config.py``) and
shares no local path with the other workers or with the launcher: what they share is what
machines share, the PostgreSQL instance, the Redis broker and the S3 run folder (through
the environment the test passes, ``EVALH_CELERY_BROKER`` included). Each worker runs in its
own process group, stopped and waited for when the block ends, also when it raises. A step
runs in the worker's one pool process (celery's prefork pool), not in the worker itself:
when that process dies (:meth:`Worker.kill_step`), the worker reports the step's task failed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import REPO

READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
CELERY_CONFIG = REPO / "deploy" / "dagster_celery_config.py"  # the one copy the docs show
# The queue dagster-celery sends steps to when a step names none (`dagster-celery/queue`).
DEFAULT_QUEUE = "dagster"


@dataclass
class Worker:
    """One worker: its name, process and folder (its log is ``folder / "worker.log"``)."""

    name: str
    proc: subprocess.Popen
    folder: Path

    @property
    def log(self) -> Path:
        return self.folder / "worker.log"

    def kill_step(self, pid: int) -> None:
        """SIGKILL the pool process ``pid`` of this worker that runs a step (a shard lost mid-way)."""
        os.kill(pid, signal.SIGKILL)

    def kill(self) -> None:
        """Kill the worker and everything it started at once (SIGKILL: a machine lost mid-step)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=STOP_TIMEOUT_S)


@contextmanager
def celery_worker(name: str, broker: str, env: dict[str, str], dagster_yaml: Path,
                  queue: str = DEFAULT_QUEUE) -> Iterator[Worker]:
    """Start one worker consuming ``queue`` on ``broker``; yields it once celery says it is ready."""
    folder = Path(tempfile.mkdtemp(prefix=f"evalh-{name}-"))
    home = folder / "dagster_home"
    home.mkdir()
    shutil.copy(dagster_yaml, home / "dagster.yaml")
    shutil.copy(CELERY_CONFIG, folder / CELERY_CONFIG.name)
    worker_env = {**env, "EVALH_CELERY_BROKER": broker, "DAGSTER_HOME": str(home), "EVALH_CACHE_DIR": str(folder / "cache"),
                  "PYTHONPATH": os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH", "")) if p)}
    log = (folder / "worker.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "dagster_celery.app", "worker", "-Q", queue, "-n", f"{name}@%h",
         "--pool=prefork", "--concurrency=1", "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO"],
        cwd=folder, env=worker_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    worker = Worker(name, proc, folder)
    try:
        _wait_ready(worker)
        yield worker
    finally:
        _stop(worker)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def celery_workers(count: int, broker: str, env: dict[str, str], dagster_yaml: Path) -> Iterator[list[Worker]]:
    """``count`` workers (``w1``, ``w2``, ...) on the default queue."""
    with ExitStack() as stack:
        yield [stack.enter_context(celery_worker(f"w{i + 1}", broker, env, dagster_yaml)) for i in range(count)]


def _wait_ready(worker: Worker) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        text = worker.log.read_text(errors="replace") if worker.log.exists() else ""
        if " ready." in text:
            return
        if worker.proc.poll() is not None:
            raise RuntimeError(f"celery worker {worker.name} exited with {worker.proc.returncode}:\n{text[-3000:]}")
        if time.monotonic() >= deadline:
            raise RuntimeError(f"celery worker {worker.name} not ready within {READY_TIMEOUT_S} s:\n{text[-3000:]}")
        time.sleep(0.2)


def _stop(worker: Worker) -> None:
    if worker.proc.poll() is not None:
        return
    try:
        os.killpg(worker.proc.pid, signal.SIGTERM)
        worker.proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        worker.kill()
    except ProcessLookupError:
        pass
