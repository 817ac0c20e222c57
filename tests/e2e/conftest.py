"""A real `dagster dev` (webserver + daemon) on a temporary instance, serving evals in a real git repo.

Started once for the tests that use it (it takes a while on two cores; they run one after the
other on one worker, tests/conftest.py) and stopped with its whole process group as soon as the
worker's next test does not use it: left running, its daemon would keep starting runs (the
drift cron ticks every minute) beside the rest of the suite. The evals live in a temporary git
repository the tests commit to; the code location is the project's own ``workspace.yaml``
pointed at that folder with ``EVALH_EVALS_DIR``, exactly as a user would run ``./dev ui``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalh_pipeline.defs.instance_config import INSTANCE_YAML
from tests.e2e.support import GATED_AGENT, GATED_SYSTEMS, YEARLY_CRON, commit, git, hanging_eval
from tests.support.evals import STEADY_SYSTEMS, write_eval
from tests.support.http_server import free_port
from tests.support.paths import REPO
from tests.support.readiness import wait_until_answering

STARTUP_TIMEOUT = 240

@dataclass
class DagsterDev:
    url: str
    home: Path
    repo: Path
    log: Path

    def instance(self):
        import dagster as dg

        return dg.DagsterInstance.from_config(str(self.home))


def _start(root: Path) -> tuple[DagsterDev, subprocess.Popen]:
    home = root / "home"
    home.mkdir()
    # The instance evalh creates: the queued run coordinator, one run per partition at a time.
    (home / "dagster.yaml").write_text(INSTANCE_YAML)
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "evalh@example.com")
    git(repo, "config", "user.name", "evalh e2e")
    git(repo, "config", "commit.gpgsign", "false")
    evals = repo / "evals"
    # One eval per behaviour, so each test sees only the runs it caused.
    write_eval(evals / "fix", cases=3, systems=STEADY_SYSTEMS,
               extra_yaml="automation: {on_fixture_change: true}\n")
    # Its sensor runs from the start, on a yearly cron until its test makes it `* * * * *`: a run a
    # minute beside every other test would be a run worker's CPU a minute, for nothing.
    write_eval(evals / "drifting", cases=3, systems=STEADY_SYSTEMS,
               extra_yaml=f'automation: {{drift_cron: "{YEARLY_CRON}"}}\n')
    write_eval(evals / "quick", cases=4)
    write_eval(evals / "versioned", cases=3, systems=STEADY_SYSTEMS)
    write_eval(evals / "rejudged", cases=3, systems=STEADY_SYSTEMS)
    write_eval(evals / "checked", cases=2, systems=STEADY_SYSTEMS)  # the Checks list after a failed run
    write_eval(evals / "routed", cases=2, systems=STEADY_SYSTEMS)  # the README's ways around the UI
    sharded = write_eval(evals / "sharded", cases=6, systems=STEADY_SYSTEMS)  # the traces stage's shard steps
    sharded.write_text(sharded.read_text().replace("run:\n", "run:\n  shards: 3\n", 1))
    write_eval(evals / "reusing", cases=4, systems=STEADY_SYSTEMS,
               extra_yaml="automation: {on_fixture_change: true, reuse_unchanged_traces: true}\n")
    for name in ("killable", "abandoned", "reexecuted"):  # UI runs killed; `evalh run` killed; re-executed
        hanging_eval(evals / name)
    queued = write_eval(evals / "queued", cases=1, systems=GATED_SYSTEMS)
    (queued.parent / "gated_agent.py").write_text(GATED_AGENT)
    (repo / "README.md").write_text("fixtures for the e2e tests\n")
    # As in any Python project: the runs the tests make by hand from here (`./runs`) and the
    # targets' bytecode, which run workers write while a test commits, are not the user's
    # sources. Without it `git add -A` can meet a .pyc being renamed into place and exit 128.
    (repo / ".gitignore").write_text("__pycache__/\n/runs/\n")
    commit(repo, "evals")

    port = free_port()
    log = root / "dagster_dev.log"
    tmp = root / "tmp"  # the servers' sockets and scratch files, thrown away with the rest
    tmp.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home), "EVALH_EVALS_DIR": str(evals), "TMPDIR": str(tmp),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dagster", "dev", "-w", str(REPO / "workspace.yaml"), "-h", "127.0.0.1",
             "-p", str(port)],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(proc, f"{url}/server_info", log, what="dagster dev", timeout_s=STARTUP_TIMEOUT)
    except BaseException:
        _stop(proc)
        raise
    return DagsterDev(url=url, home=home, repo=repo, log=log), proc


def _stop(proc: subprocess.Popen) -> None:
    # The whole process group at once (webserver, daemon, code servers, run workers): the instance
    # is thrown away, and a graceful stop would wait for the runs still in flight (a drift-cron run,
    # the backfill's last ones).
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class _Server:
    """This worker's `dagster dev`: started by the first test that needs it, stopped after the last."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp_path_factory = tmp_path_factory
        self._running: tuple[DagsterDev, subprocess.Popen] | None = None

    def running(self) -> DagsterDev:
        if self._running is None:
            self._running = _start(self._tmp_path_factory.mktemp("dagster_dev"))
        return self._running[0]

    def stop(self) -> None:
        if self._running is not None:
            _stop(self._running[1])
            self._running = None


_SERVER = pytest.StashKey[_Server]()
FIXTURE = "dagster_dev"


@pytest.fixture
def dagster_dev(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> DagsterDev:
    """The worker's running `dagster dev` (one for every test that uses it; see the module's docstring)."""
    stash = request.config.stash
    if _SERVER not in stash:
        stash[_SERVER] = _Server(tmp_path_factory)
    return stash[_SERVER].running()


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    # xdist runs a test only once it knows the next one, so `nextitem` is None only at the very end.
    if FIXTURE in getattr(item, "fixturenames", ()) and FIXTURE not in getattr(nextitem, "fixturenames", ()):
        if (server := item.config.stash.get(_SERVER, None)) is not None:
            server.stop()


def pytest_sessionfinish(session: pytest.Session) -> None:
    # After -x or Ctrl-C the last test's teardown may not have stopped it.
    if (server := session.config.stash.get(_SERVER, None)) is not None:
        server.stop()
