"""How every benchmark here measures a process, and the paths and tools they share.

Wall time: `time.perf_counter()` from just before the process is started until it is
reaped (os.wait4): the whole process, interpreter, imports and Dagster included.

Memory: the process tree's PSS, sampled every ``POLL_SECONDS`` (the sum over the process
and its descendants of /proc/PID/smaps_rollup's Pss: a page shared by several processes is
charged to each in part, so the tree counts it once); the maximum sum is the peak. A spike
shorter than one poll can be missed, so the kernel's own high-water mark of the largest
single process (wait4's ru_maxrss, RSS) is kept beside it. Sampling costs CPU that the
measured process would otherwise have on a 2-core machine, so ratio measures that need no
memory figure pass ``memory=False``.

Uses only the standard library and psutil; a Python without psutil re-executes this under
the project's .venv.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

try:
    import psutil
except ImportError:
    # Started by a Python without psutil (e.g. the system one): use the project's venv instead.
    VENV = REPO / ".venv"
    if (VENV / "bin" / "python").exists() and Path(sys.prefix).resolve() != VENV.resolve():
        os.execv(VENV / "bin" / "python", [str(VENV / "bin" / "python"), *sys.argv])
    sys.exit("error: psutil is not installed; run `./dev bench` (it uses the project's .venv)")

OUT = REPO / "benchmarks" / "out"
LOGS = OUT / "logs"
FIXTURE_SCRIPT = REPO / "benchmarks" / "make_fixture.py"
DEFAULT_PEER = Path("/tmp/ehvenv/bin/evalh")
POLL_SECONDS = 0.05
LAST_CPU_S = [0.0]  # CPU seconds of the process measure() reaped last
OURS, PEER = "ours", "eval-harness"


@dataclass
class Measurement:
    """One measured process."""

    scenario: str
    tool: str
    command: str
    wall_s: float
    peak_pss_mb: float
    max_rss_mb: float
    exit_code: int
    ok: bool
    log: str
    load: tuple[float, float, float]  # the load average when the process ended
    note: str = ""
    cpu_s: float = 0.0  # user + system CPU of the process and the children it waited for
    extra: dict = field(default_factory=dict)


@dataclass
class Tool:
    """An `evalh` binary (ours or eval-harness's) and its environment for a fixture."""

    name: str
    evalh: Path

    def env(self, fixture: Path) -> dict[str, str]:
        """Ours: a fresh existing instance in the fixture; eval-harness: the fixture on
        PYTHONPATH (it imports the stub agent from there)."""
        if self.name == OURS:
            return {**os.environ, "DAGSTER_HOME": str(fresh_dagster_home(fixture))}
        return {**os.environ, "PYTHONPATH": str(fixture)}


# --------------------------------------------------------------------------- finding things


def find_our_evalh() -> Path:
    """The project's `evalh`: the repo venv first, then PATH."""
    candidate = REPO / ".venv" / "bin" / "evalh"
    if candidate.exists():
        return candidate
    found = shutil.which("evalh")
    if found is None:
        sys.exit("error: `evalh` not found (run ./dev setup once to create .venv/)")
    return Path(found)


def our_python() -> Path:
    """The Python of the project's venv (the one `evalh` runs on)."""
    return find_our_evalh().parent / "python"


def find_peer_evalh() -> Path | None:
    """eval-harness's `evalh`: $EVAL_HARNESS_EVALH, else /tmp/ehvenv/bin/evalh, else None."""
    configured = os.environ.get("EVAL_HARNESS_EVALH")
    if configured:
        path = Path(configured)
        if not path.exists():
            sys.exit(f"error: EVAL_HARNESS_EVALH={configured} does not exist")
        return path
    return DEFAULT_PEER if DEFAULT_PEER.exists() else None


def make_fixture(folder: Path, n: int, latency_s: float) -> Path:
    """benchmarks/make_fixture.py: eval.yaml, cases.jsonl and stub_agent.py in ``folder``
    (N cases x 2 variants of a stub agent that sleeps LAT seconds, max_concurrency 64)."""
    subprocess.run([sys.executable, str(FIXTURE_SCRIPT), str(folder), str(n), str(latency_s)], check=True)
    return folder


def find_run_dir(fixture: Path) -> Path | None:
    """The newest run directory under the fixture's runs/ folder (hidden staging dirs excluded)."""
    runs = fixture / "runs"
    if not runs.is_dir():
        return None
    dirs = [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return max(dirs, key=lambda p: p.stat().st_mtime, default=None)


def git_commit() -> str:
    """The repo's HEAD (read-only), so results can be tied to the code they measured."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "evalh_pipeline"], cwd=REPO,
                               capture_output=True, text=True)
    except OSError:
        return "unknown"
    return head.stdout.strip() + (" (evalh_pipeline/ modified)" if dirty.stdout.strip() else "")


def load() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages, rounded."""
    one, five, fifteen = os.getloadavg()
    return round(one, 2), round(five, 2), round(fifteen, 2)


def load_text() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in load())


# --------------------------------------------------------------------------- environments


def fresh_dagster_home(parent: Path) -> Path:
    """A new Dagster instance in ``parent`` as `evalh` creates one (its dagster.yaml:
    telemetry off, the queued run coordinator), its SQLite storage already created.

    A user's instance exists before their runs; creating the storage is a one-off cost, so
    it happens here, untimed.
    """
    home = Path(tempfile.mkdtemp(prefix="dagster_home-", dir=parent))
    code = ("import sys, dagster; from evalh_pipeline.defs.instance_config import INSTANCE_YAML; "
            "open(sys.argv[1] + '/dagster.yaml', 'w').write(INSTANCE_YAML); "
            "dagster.DagsterInstance.from_config(sys.argv[1])")
    subprocess.run([str(our_python()), "-c", code, str(home)], check=True, capture_output=True, cwd=parent)
    return home


def with_bytecode(env: dict[str, str], python: Path, cwd: Path) -> dict[str, str]:
    """``env`` for timed processes, with the project's bytecode compiled once, untimed, beside
    its sources, as an installed package has it (pip compiled the rest of the venv).

    A shell with PYTHONDONTWRITEBYTECODE set (as this machine's agents have) never writes it,
    so every timed process would compile the project's modules from source again. ``cwd`` is
    a folder outside any checkout (with -c the working folder comes first on sys.path).
    """
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    code = ("import compileall, sys, evalh_pipeline, os; "
            "sys.exit(not compileall.compile_dir(os.path.dirname(evalh_pipeline.__file__), quiet=1))")
    subprocess.run([str(python), "-c", code], env=env, check=True, capture_output=True, cwd=cwd)
    return env


# --------------------------------------------------------------------------- measuring


def _pss_bytes(pid: int) -> int:
    """The PSS of one process from smaps_rollup (one line per field, cheap), else psutil."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        info = psutil.Process(pid).memory_full_info()
        return int(getattr(info, "pss", info.rss))
    except psutil.Error:
        return 0


def tree_rss_bytes(pid: int) -> int:
    """Memory of a process plus all its descendants: the sum of their PSS (0 if it is gone)."""
    try:
        root = psutil.Process(pid)
        pids = [pid, *(child.pid for child in root.children(recursive=True))]
    except psutil.Error:
        return 0
    return sum(_pss_bytes(p) for p in pids)


def kill_tree(pid: int) -> None:
    """SIGKILL a process we started and its descendants."""
    try:
        root = psutil.Process(pid)
        processes = [*root.children(recursive=True), root]
    except psutil.Error:
        return
    for process in processes:
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass


def measure(cmd: list[str], *, cwd: Path, env: dict[str, str], log: Path, timeout_s: float,
            memory: bool = True) -> tuple[float, float, float, int]:
    """Run ``cmd`` to completion; return (wall s, peak tree PSS MB, ru_maxrss MB, exit code).
    The process's CPU time (wait4's rusage) is kept in ``LAST_CPU_S``.

    Output goes to ``log``. A process that runs past ``timeout_s`` is killed and reported
    with exit code -9. ``memory=False`` samples nothing (peak PSS 0) and sleeps until the
    process exits (a pidfd), so the wall time is exact rather than rounded up to a poll.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        out.write(f"$ (cd {cwd} && {' '.join(cmd)})\n")
        out.flush()
        started = time.perf_counter()
        deadline = started + timeout_s
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        peak = 0
        if memory:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid != 0 or time.perf_counter() > deadline:
                    break
                peak = max(peak, tree_rss_bytes(proc.pid))
                time.sleep(POLL_SECONDS)
        else:
            pid, status, usage = _wait_exit(proc.pid, deadline)
        if pid == 0:  # past the deadline
            kill_tree(proc.pid)
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    proc.returncode = -9 if pid == 0 else os.waitstatus_to_exitcode(status)  # we reaped it; tell Popen
    LAST_CPU_S[0] = usage.ru_utime + usage.ru_stime
    return wall, peak / 2**20, usage.ru_maxrss / 1024, proc.returncode


def _wait_exit(pid: int, deadline: float) -> tuple[int, int, Any]:
    """Sleep until ``pid`` exits or ``deadline`` passes (its pidfd becomes readable on
    exit), then reap it without blocking: (pid, or 0 if it still runs; status; rusage)."""
    fd = os.pidfd_open(pid)
    try:
        while time.perf_counter() < deadline and not select.select([fd], [], [], 1.0)[0]:
            pass
    finally:
        os.close(fd)
    return os.wait4(pid, os.WNOHANG)


def measure_process(scenario: str, tool: str, cmd: list[str], *, cwd: Path, env: dict[str, str],
                    timeout_s: float, memory: bool = True, log_name: str | None = None) -> Measurement:
    """:func:`measure` one command and record it as a :class:`Measurement`."""
    log = LOGS / f"{log_name or f'{scenario}-{tool}'}.log"
    wall, pss, maxrss, code = measure(cmd, cwd=cwd, env=env, log=log, timeout_s=timeout_s, memory=memory)
    note = "timed out" if code == -9 else ("" if code == 0 else f"exit {code}")
    return Measurement(scenario, tool, " ".join(cmd), wall, pss, maxrss, code, code == 0, str(log), load(), note,
                       cpu_s=LAST_CPU_S[0])


# --------------------------------------------------------------------------- printing


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    sys.stdout.flush()
