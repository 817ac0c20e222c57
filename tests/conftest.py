"""Shared fixtures: temporary eval folders written from small templates."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from evalh_pipeline.registry import Registry
from tests.support.evalh_process import evalh_env
from tests.support.evals import write_eval

# Test tiers (see pyproject's markers). A test is a unit test unless it says otherwise with
# @pytest.mark.integration or @pytest.mark.e2e, or is marked here by where it lives or what
# it uses. `./dev unit` runs the unit tier only; `./dev test` (CI) runs every tier.
E2E_FOLDERS = {"cli", "examples", "plugins"}  # `evalh` run as a process, as its users run it
INTEGRATION_FOLDERS = {"defs"}  # a real Dagster instance, assets materialized
E2E_FIXTURES = {"env"}  # the environment of an `evalh` subprocess (below)
INTEGRATION_FIXTURES = {"instance"}  # a real Dagster instance (tests/defs/conftest.py)
TIERS = ("integration", "e2e")


# Scheduling (`./dev test`: pytest-xdist's --dist loadfile --no-loadscope-reorder). A worker takes a
# whole group at a time: a file, so a module's fixture (a run made once for several tests) is made
# once; and the files of a folder that share one server (tests/e2e: `dagster dev`,
# tests/e2e/conftest.py) are one group, so one worker starts one server for all of them. Groups are
# queued costliest first (a shared server's, then by how many of their tests start processes): a
# long group started last would leave the other worker idle.
SHARED_SERVER_FOLDERS = ("tests/e2e/",)


def _group(nodeid: str) -> str:
    """The unit of work a test belongs to: its shared server's folder, or its file."""
    path = nodeid.split("::", 1)[0]
    return next((folder for folder in SHARED_SERVER_FOLDERS if path.startswith(folder)), path)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist loadfile, with the files of a shared-server folder as one unit (see _group)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Grouped(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    return Grouped(config, log)


def pytest_configure(config: pytest.Config) -> None:
    from hypothesis import settings

    # No deadline: a property test's examples are not timed (a loaded CI worker can be
    # descheduled for longer than Hypothesis's default 200 ms, which then fails a correct
    # test). Under CI the examples are derandomized, so a run there is repeatable.
    in_ci = bool(os.environ.get("CI"))
    settings.register_profile("evalh", deadline=None, derandomize=in_ci, print_blob=True,
                              **({"database": None} if in_ci else {}))
    settings.load_profile("evalh")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Report a failure even when CPython < 3.11.8 cannot parse its traceback's source.

    Formatting a failure parses the source of each traceback entry; CPython before 3.11.8 keeps
    the AST constructor's recursion depth per interpreter, not per thread (gh-106905), so a
    parse in another thread at that moment raises ``SystemError: AST constructor recursion
    depth mismatch`` and xdist loses the whole report (INTERNALERROR). Format that one failure
    natively (no source parsing) instead.
    """
    try:
        return (yield)
    except SystemError as error:
        if "AST constructor recursion depth mismatch" not in str(error):
            raise
        option = item.config.option
        style, option.tbstyle = option.tbstyle, "native"
        try:
            return pytest.TestReport.from_item_and_call(item, call)
        finally:
            option.tbstyle = style


def _tier(item: pytest.Item) -> str:
    for tier in TIERS:
        if item.get_closest_marker(tier):
            return tier
    folder = Path(item.path).parent.name
    fixtures = set(getattr(item, "fixturenames", ()))
    if folder in E2E_FOLDERS or fixtures & E2E_FIXTURES:
        item.add_marker(pytest.mark.e2e)
        return "e2e"
    if folder in INTEGRATION_FOLDERS or fixtures & INTEGRATION_FIXTURES:
        item.add_marker(pytest.mark.integration)
        return "integration"
    return "unit"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    groups: dict[str, list[pytest.Item]] = {}
    heavy: dict[str, int] = {}
    for item in items:
        tier = _tier(item)
        group = _group(item.nodeid)
        groups.setdefault(group, []).append(item)
        heavy[group] = heavy.get(group, 0) + (tier != "unit")

    def cost(group: str) -> tuple[bool, int, int]:
        return group in SHARED_SERVER_FOLDERS, heavy[group], len(groups[group])

    items[:] = [item for group in sorted(groups, key=cost, reverse=True) for item in groups[group]]


@pytest.fixture(autouse=True)
def _sigterm_restored() -> Iterator[None]:
    """Each test leaves SIGTERM's action as it found it. Dagster's in-process execution points
    SIGTERM at SIGINT's handler when it restores its own; a suite started in the background of
    a script ignores SIGINT, and every process started after such a test would then ignore
    SIGTERM (``terminate()`` would hang). evalh's own runs restore it (defs/launch.py); this
    covers the tests that call Dagster directly."""
    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


@pytest.fixture(autouse=True)
def _unit_tests_start_no_evalh_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit test that starts `evalh`, the engine or Dagster in a new process fails, saying to mark it.

    Short-lived programs (git, a shell, a tiny script) are fine in a unit test; a process
    that imports this project or Dagster costs seconds and belongs to the integration tier.
    """
    if any(request.node.get_closest_marker(tier) for tier in TIERS):
        return
    execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def refuse_heavy(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> None:
        if _is_heavy(args):
            raise RuntimeError(
                f"a unit test started {args!r:.160}: mark the test @pytest.mark.integration "
                "(or e2e) so `./dev unit` stays fast"
            )
        execute_child(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse_heavy)
@pytest.fixture
def eval_dir(tmp_path: Path) -> Path:
    return tmp_path / "toy"


@pytest.fixture
def toy_eval(eval_dir: Path) -> Path:
    return write_eval(eval_dir)


@pytest.fixture
def env(tmp_path):
    """Environment for `evalh` subprocesses: a fresh Dagster home and a call log for the stub agent."""
    return evalh_env(tmp_path)


@pytest.fixture
def registered() -> Iterator[Callable[[Registry[Any], str, type], None]]:
    """``registered(REGISTRY, name, cls)``: a plugin class for this test only; the registry is restored after."""
    with ExitStack() as stack:
        yield lambda registry, name, cls: stack.enter_context(registry.registered(name, cls))


HEAVY_PROGRAMS = {"evalh", "dagster", "dagster-daemon", "dagster-webserver"}


def _is_heavy(args: Any) -> bool:
    """`evalh`/Dagster, or a Python that imports this project or Dagster (-m, -c)."""
    words = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
    words = [os.fsdecode(w) if isinstance(w, (bytes, os.PathLike)) else str(w) for w in words]
    if not words:
        return False
    program = os.path.basename(words[0].split()[0]) if words[0].strip() else ""
    if program in HEAVY_PROGRAMS:
        return True
    return program.startswith("python") and any(
        ("evalh_pipeline" in w or "dagster" in w) for w in words[1:] if not w.startswith("/")
    )


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A real PostgreSQL server for the session (skipped, loudly, where none is installed)."""
    from tests.postgres_server import postgres_bin, running_postgres

    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed: `./dev test` installs it when run as root "
                    "(apt-get install postgresql)")
    with running_postgres() as dsn:
        yield dsn


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A real redis-server on loopback for the session (skipped, loudly, where none is installed)."""
    from tests.support.redis_server import redis_server_bin, running_redis

    if redis_server_bin() is None:
        if os.environ.get("EVALH_REQUIRE_REDIS"):
            pytest.fail("redis-server is not installed and CI requires the deployment tests (apt-get install redis-server)")
        pytest.skip("redis-server is not installed: `./dev test` installs it when run as root "
                    "(apt-get install redis-server)")
    with running_redis() as url:
        yield url


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server on loopback for the session (tests/support/s3_server.py)."""
    from tests.support.s3_server import running_s3

    with running_s3() as server:
        yield server
