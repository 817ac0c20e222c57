#!/usr/bin/env python3
"""Benchmarks for `evalh` (this project) and, when installed, the peer tool eval-harness.

    python benchmarks/run.py                 # everything (several minutes)
    python benchmarks/run.py --quick         # N=1000 smoke check
    python benchmarks/run.py --only run      # run | reeval | scale
    python benchmarks/run.py --only reeval5 [--repeat 3]   # 100k traces x 5 evaluators (reeval_bench.py)
    python benchmarks/run.py --only query | workspace | http | store | incremental   # query_bench.py, ...
    python benchmarks/run.py --all           # these scenarios, then every suite above, one after the other
    python benchmarks/run.py --skip-peer     # do not run eval-harness

Scenarios (fixtures come from benchmarks/make_fixture.py):

  run     N=10000 cases x 2 variants, stub latency 20 ms, max_concurrency 64.
          Physical limit = N * 2 * LAT / 64. Targets: wall <= 1.3x limit, peak RSS <= 250 MB.
  reeval  `evalh re-evaluate` on the run above (target <= 1.5 s), plus the engine alone
          (evaluate_traces + write_summary, no Dagster, no CLI) to show Dagster's share.
  scale   N=100000 and N=10000 at LAT=0. Targets: wall <= 30 s, peak RSS <= 300 MB,
          RSS(100k) / RSS(10k) <= 1.3.

Each tool runs as a whole process. Wall time is measured from just before the process is
started until it has exited. Peak memory ("peak RSS" in the tables) is measured by polling
the process tree with psutil every 50 ms and summing the PSS of the process and all of its
descendants (the maximum of those sums is reported): PSS counts a page that a forked child
shares with its parent once, where summed RSS would count it twice. Every `evalh` of ours gets a fresh DAGSTER_HOME with telemetry off, its storage created before timing.

Uses only the standard library and psutil. Results are printed as a table and written to
benchmarks/out/results.json; each process's output goes to benchmarks/out/logs/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

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
MAX_CONCURRENCY = 64  # what make_fixture.py writes into eval.yaml

# Targets (they apply to the full sizes; --quick prints them but they mean little there).
RUN_LIMIT_FACTOR = 1.3
RUN_RSS_MB = 250
REEVAL_WALL_S = 1.5
SCALE_WALL_S = 30
SCALE_RSS_MB = 300
SCALE_RSS_RATIO = 1.3

OURS, PEER = "ours", "eval-harness"


# --------------------------------------------------------------------------- data


@dataclass
class Measurement:
    """One measured process."""

    scenario: str
    tool: str
    command: str
    n: int
    latency_s: float
    wall_s: float
    peak_rss_mb: float
    exit_code: int
    ok: bool
    log: str
    note: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class Tool:
    """An `evalh` binary and how to prepare its environment for a fixture."""

    name: str
    evalh: Path

    def env(self, fixture: Path) -> dict[str, str]:
        env = dict(os.environ)
        if self.name == OURS:
            env["DAGSTER_HOME"] = str(fresh_dagster_home(fixture))
        else:
            env["PYTHONPATH"] = str(fixture)  # eval-harness imports stub_agent from there
        return env


# --------------------------------------------------------------------------- setup


def find_fixture_script() -> Path:
    """The fixture generator, benchmarks/make_fixture.py."""
    return FIXTURE_SCRIPT


def find_our_evalh() -> Path:
    """The project's `evalh`: the repo venv first, then PATH."""
    candidate = REPO / ".venv" / "bin" / "evalh"
    if candidate.exists():
        return candidate
    found = shutil.which("evalh")
    if found is None:
        sys.exit("error: `evalh` not found (run ./dev test once to create .venv/)")
    return Path(found)


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
    """Write eval.yaml, cases.jsonl and stub_agent.py into ``folder``."""
    subprocess.run([sys.executable, str(find_fixture_script()), str(folder), str(n), str(latency_s)], check=True)
    return folder


def fresh_dagster_home(fixture: Path) -> Path:
    """A new Dagster instance for one fixture, telemetry off, its storage already created.

    A user's instance exists before their runs; creating the SQLite schemas (about 2 s) is a
    one-off cost, so it happens here, untimed, as `dagster dev` or a first run would do it.
    """
    home = Path(tempfile.mkdtemp(prefix="dagster_home-", dir=fixture))
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    subprocess.run(
        [sys.executable, "-c", "import dagster; dagster.DagsterInstance.get()"],
        env={**os.environ, "DAGSTER_HOME": str(home)}, check=True, capture_output=True,
    )
    return home


def find_run_dir(fixture: Path) -> Path | None:
    """The newest run directory under the fixture's runs/ folder (hidden staging dirs excluded)."""
    runs = fixture / "runs"
    if not runs.is_dir():
        return None
    dirs = [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return max(dirs, key=lambda p: p.stat().st_mtime, default=None)


# --------------------------------------------------------------------------- measuring


def tree_rss_bytes(pid: int) -> int:
    """Memory of a process plus all its descendants: the sum of their PSS (0 if it is gone).

    PSS (proportional set size) charges each page shared by several processes to each of
    them in part, so the sum over a tree counts every page once. Summing RSS instead would
    count twice the pages a forked child shares with its parent (evalh's engine process,
    the judging workers). Where the system reports no PSS, RSS is used.
    """
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for process in processes:
        try:
            info = process.memory_full_info()
            total += getattr(info, "pss", info.rss)
        except psutil.AccessDenied:
            total += process.memory_info().rss
        except psutil.Error:
            pass  # exited between listing and sampling
    return total


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


def with_bytecode(env: dict[str, str], python: Path, cwd: Path) -> dict[str, str]:
    """``env`` for timed processes, with the project's bytecode compiled once, untimed, beside
    its sources, as an installed package has it (pip compiled the rest of the venv).

    A shell with PYTHONDONTWRITEBYTECODE set (as this machine's agents have) never writes it,
    so every timed process would compile the project's ~70 modules from source again (~0.08 s
    each). PYTHONPYCACHEPREFIX is no cure: Python then ignores the venv's own bytecode too and
    the first timed process compiles Dagster. The project is the checkout ``env``'s PYTHONPATH
    names (another checkout, to compare), else the installed one; ``cwd`` is a folder outside
    any checkout (with -c the working folder comes first on sys.path).
    """
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    code = ("import compileall, sys, evalh_pipeline, os; "
            "sys.exit(not compileall.compile_dir(os.path.dirname(evalh_pipeline.__file__), quiet=1))")
    subprocess.run([str(python), "-c", code], env=env, check=True, capture_output=True, cwd=cwd)
    return env


def wait_for_recorder(run_dir: Path, timeout_s: float = 600) -> float:
    """Wait until ``run_dir``'s lock is free; return the epoch time it was.

    `evalh re-evaluate` returns before its Dagster run is recorded: a background recorder
    holds the run's lock until it is done (evalh_pipeline/defs/record_after.py). A command
    timed next on the same run would wait for it, and count that wait as its own."""
    import fcntl

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        fd = os.open(run_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return time.time()
        except BlockingIOError:
            time.sleep(0.01)
        finally:
            os.close(fd)
    return float("nan")


def measure(cmd: list[str], *, cwd: Path, env: dict[str, str], log: Path, timeout_s: float,
            memory: bool = True) -> tuple[float, float, int]:
    """Run ``cmd`` to completion; return (wall seconds, peak tree RSS in MB, exit code).

    The process is reaped with os.wait4 so the wall time ends when it exits; meanwhile the
    tree's RSS is sampled every POLL_SECONDS. Output goes to ``log``. A process that runs
    past ``timeout_s`` is killed and reported with exit code -9.

    ``memory=False`` samples nothing (the peak is reported as 0) and waits for the exit
    itself: reading each process's memory map every 50 ms costs CPU that the measured
    process would otherwise have on a 2-core machine, and the wall time is then exact
    rather than rounded up to the next sample.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        out.write(f"$ (cd {cwd} && {' '.join(cmd)})\n")
        out.flush()
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        peak = 0
        if not memory:
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                kill_tree(proc.pid)
                proc.wait()
                return time.perf_counter() - started, 0.0, -9
            return time.perf_counter() - started, 0.0, proc.returncode
        while True:
            pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
            if pid != 0:
                break
            peak = max(peak, tree_rss_bytes(proc.pid))
            if time.perf_counter() - started > timeout_s:
                kill_tree(proc.pid)
                _, status, _ = os.wait4(proc.pid, 0)
                break
            time.sleep(POLL_SECONDS)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # we reaped it; tell Popen
    return wall, peak / 2**20, proc.returncode


def measure_tool(
    scenario: str, tool: Tool, args: list[str], fixture: Path, n: int, latency_s: float,
    timeout_s: float, env: dict[str, str],
) -> Measurement:
    """Run ``<tool's evalh> args`` in ``fixture`` with ``env`` and record it."""
    cmd = [str(tool.evalh), *args]
    log = LOGS / f"{scenario}-{tool.name}.log"
    wall, rss, code = measure(cmd, cwd=fixture, env=env, log=log, timeout_s=timeout_s)
    note = "timed out" if code == -9 else ("" if code == 0 else f"exit {code}")
    m = Measurement(scenario, tool.name, " ".join(cmd), n, latency_s, wall, rss, code, code == 0, str(log), note)
    report_line(m)
    return m


def report_line(m: Measurement) -> None:
    status = "ok" if m.ok else f"FAILED ({m.note}; see {m.log})"
    print(f"  [{m.scenario}] {m.tool:<12} N={m.n:<6} wall {m.wall_s:7.2f} s  peak RSS {m.peak_rss_mb:6.0f} MB  {status}",
          flush=True)


# --------------------------------------------------------------------------- scenarios


def run_eval(scenario: str, tool: Tool, root: Path, n: int, latency_s: float, timeout_s: float) -> Measurement:
    """Fresh fixture for ``tool``, then `evalh run eval.yaml`; ok only if summary.yaml exists."""
    fixture = make_fixture(root / scenario / tool.name, n, latency_s)
    env = tool.env(fixture)
    m = measure_tool(scenario, tool, ["run", str(fixture / "eval.yaml")], fixture, n, latency_s, timeout_s, env)
    run_dir = find_run_dir(fixture)
    m.extra["fixture"] = str(fixture)
    m.extra["env"] = {k: env[k] for k in ("DAGSTER_HOME", "PYTHONPATH") if k in env}
    m.extra["run_dir"] = str(run_dir) if run_dir else None
    if m.ok and (run_dir is None or not (run_dir / "summary.yaml").exists()):
        m.ok, m.note = False, "no summary.yaml"
        print(f"  [{scenario}] {tool.name}: exited 0 but no runs/<id>/summary.yaml", flush=True)
    return m


def scenario_run(tools: list[Tool], root: Path, n: int, timeout_s: float) -> list[Measurement]:
    latency_s = 0.02
    print(f"\n== run: N={n}, LAT={latency_s}, max_concurrency {MAX_CONCURRENCY}", flush=True)
    return [run_eval("run", tool, root, n, latency_s, timeout_s) for tool in tools]


def scenario_reeval(tools: list[Tool], runs: list[Measurement], timeout_s: float) -> list[Measurement]:
    """`evalh re-evaluate` on each tool's run from the run scenario, then our engine alone."""
    print("\n== re-evaluate (on the run scenario's run directories)", flush=True)
    results = []
    for tool in tools:
        run = next((m for m in runs if m.tool == tool.name and m.ok), None)
        if run is None:
            print(f"  [reeval] {tool.name}: skipped, its run failed", flush=True)
            continue
        fixture, run_dir = Path(run.extra["fixture"]), Path(run.extra["run_dir"])
        env = {**os.environ, **run.extra["env"]}  # same Dagster instance / PYTHONPATH as the run
        # --all: a full re-judge (without it, an unchanged config re-judges nothing; see incremental_bench.py).
        args = ["re-evaluate", "--all", str(run_dir)] if tool.name == OURS else ["re-evaluate", str(run_dir)]
        m = measure_tool("reeval", tool, args, fixture, run.n, run.latency_s, timeout_s, env)
        wait_for_recorder(run_dir, timeout_s)
        results.append(m)
        if tool.name == OURS:
            results.append(measure_engine_reeval(tool, fixture, run_dir, run.n, timeout_s))
    return results


def measure_engine_reeval(tool: Tool, fixture: Path, run_dir: Path, n: int, timeout_s: float) -> Measurement:
    """Our engine alone: this script re-run under the project's Python with --engine-reeval."""
    python = tool.evalh.parent / "python"
    cmd = [str(python), str(Path(__file__).resolve()), "--engine-reeval", str(fixture / "eval.yaml"), str(run_dir)]
    log = LOGS / "reeval-engine.log"
    wall, rss, code = measure(cmd, cwd=fixture, env=dict(os.environ), log=log, timeout_s=timeout_s)
    m = Measurement("reeval", "ours-engine", " ".join(cmd), n, 0.0, wall, rss, code, code == 0, str(log),
                    "" if code == 0 else f"exit {code}")
    if code == 0:
        m.extra = json.loads(log.read_text().strip().splitlines()[-1])
        m.note = (f"in-process: import {m.extra['import_s']:.2f} s, evaluate_traces {m.extra['evaluate_s']:.2f} s, "
                  f"write_summary {m.extra['summary_s']:.2f} s")
    report_line(m)
    if code == 0:
        print(f"           {m.note}", flush=True)
    return m


def engine_reeval(eval_yaml: str, run_dir: str) -> None:
    """Child-process entry point: time evaluate_traces + write_summary in-process, print JSON."""
    import asyncio

    started = time.perf_counter()
    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.runner.evaluation import evaluate_traces
    from evalh_pipeline.runner.stages import write_summary
    from evalh_pipeline.store.run_dir import RunDirectory

    spec = load_eval(eval_yaml)
    directory = RunDirectory(Path(run_dir))
    imported = time.perf_counter()
    asyncio.run(evaluate_traces(spec, directory, incremental=False))
    evaluated = time.perf_counter()
    write_summary(spec, directory)
    summarized = time.perf_counter()
    print(json.dumps({"import_s": imported - started, "evaluate_s": evaluated - imported,
                      "summary_s": summarized - evaluated, "engine_s": summarized - imported}))


def scenario_scale(tools: list[Tool], root: Path, n_big: int, n_small: int, timeout_s: float) -> list[Measurement]:
    print(f"\n== scale: LAT=0, N={n_big} and N={n_small}", flush=True)
    results = []
    for tool in tools:
        results.append(run_eval(f"scale-{n_big}", tool, root, n_big, 0.0, timeout_s))
        results.append(run_eval(f"scale-{n_small}", tool, root, n_small, 0.0, timeout_s))
    return results


# --------------------------------------------------------------------------- report


def find(measurements: list[Measurement], scenario: str, tool: str) -> Measurement | None:
    return next((m for m in measurements if m.scenario == scenario and m.tool == tool), None)


def check(name: str, value: float | None, target: float, unit: str) -> dict:
    """One target row: value <= target?"""
    ok = value is not None and value <= target
    return {"check": name, "value": value, "target": target, "unit": unit, "ok": ok}


def targets(measurements: list[Measurement], n_run: int, n_big: int, n_small: int) -> list[dict]:
    """The targets, for our tool, from whatever scenarios ran."""
    rows = []
    run = find(measurements, "run", OURS)
    if run and run.ok:
        limit = n_run * 2 * run.latency_s / MAX_CONCURRENCY
        rows.append(check(f"run wall / physical limit ({limit:.2f} s)", run.wall_s / limit, RUN_LIMIT_FACTOR, "x"))
        rows.append(check("run peak RSS", run.peak_rss_mb, RUN_RSS_MB, "MB"))
    reeval = find(measurements, "reeval", OURS)
    if reeval and reeval.ok:
        rows.append(check("re-evaluate wall (CLI)", reeval.wall_s, REEVAL_WALL_S, "s"))
    engine = find(measurements, "reeval", "ours-engine")
    if engine and engine.ok:
        rows.append(check("re-evaluate engine only (in-process)", engine.extra["engine_s"], REEVAL_WALL_S, "s"))
    big, small = find(measurements, f"scale-{n_big}", OURS), find(measurements, f"scale-{n_small}", OURS)
    if big and big.ok:
        rows.append(check(f"scale N={n_big} wall", big.wall_s, SCALE_WALL_S, "s"))
        rows.append(check(f"scale N={n_big} peak RSS", big.peak_rss_mb, SCALE_RSS_MB, "MB"))
        if small and small.ok:
            rows.append(check(f"RSS(N={n_big}) / RSS(N={n_small})", big.peak_rss_mb / small.peak_rss_mb,
                              SCALE_RSS_RATIO, "x"))
    return rows


def comparisons(measurements: list[Measurement]) -> list[dict]:
    """ours / eval-harness for every scenario both ran successfully (< 1 means we are better)."""
    rows = []
    for ours in (m for m in measurements if m.tool == OURS and m.ok):
        peer = find(measurements, ours.scenario, PEER)
        if peer and peer.ok:
            rows.append({"scenario": ours.scenario, "wall_ratio": ours.wall_s / peer.wall_s,
                         "rss_ratio": ours.peak_rss_mb / peer.peak_rss_mb})
    return rows


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))


def print_report(measurements: list[Measurement], comps: list[dict], checks: list[dict], quick: bool) -> None:
    print("\n== results (wall: process start to exit; peak RSS: psutil, PSS of the process tree summed, 50 ms poll)\n")
    print_table(
        ["scenario", "tool", "N", "LAT s", "wall s", "peak RSS MB", "status"],
        [[m.scenario, m.tool, str(m.n), f"{m.latency_s:g}", f"{m.wall_s:.2f}", f"{m.peak_rss_mb:.0f}",
          "ok" if m.ok else f"FAILED: {m.note}"] for m in measurements],
    )
    if comps:
        print("\nours / eval-harness (< 1.00 means ours is faster / smaller)\n")
        print_table(["scenario", "wall ratio", "RSS ratio"],
                    [[c["scenario"], f"{c['wall_ratio']:.2f}", f"{c['rss_ratio']:.2f}"] for c in comps])
    if checks:
        title = "targets (ours)" + ("  -- quick mode: sizes are too small for these to mean much" if quick else "")
        print(f"\n{title}\n")
        print_table(["check", "value", "target", "ok"],
                    [[c["check"], f"{c['value']:.2f} {c['unit']}", f"<= {c['target']:g} {c['unit']}",
                      "yes" if c["ok"] else "NO"] for c in checks])


def git_commit() -> str:
    """The repo's HEAD (read-only), so results can be tied to the code they measured."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "evalh_pipeline"], cwd=REPO,
                               capture_output=True, text=True)
    except OSError:
        return "unknown"
    return head.stdout.strip() + (" (evalh_pipeline/ modified)" if dirty.stdout.strip() else "")


def write_json(measurements, comps, checks, args, sizes: dict) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "results.json"
    payload = {
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": git_commit(), "cpus": os.cpu_count(), "loadavg_at_end": os.getloadavg(),
        "quick": args.quick, "only": args.only, "sizes": sizes,
        "rss_method": "psutil: sum of PSS of the process and its descendants, max over 50 ms samples",
        "wall_method": "time.perf_counter from just before Popen to os.wait4 reaping the process",
        "measurements": [asdict(m) for m in measurements],
        "comparisons": comps, "targets": checks,
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark evalh (and eval-harness, if installed).")
    parser.add_argument("--quick", action="store_true", help="N=1000 everywhere (scale: 1000 vs 100), a smoke check")
    parser.add_argument("--only", choices=["run", "reeval", "scale"], help="one scenario (reeval also does run)")
    parser.add_argument("--skip-peer", action="store_true", help="do not run eval-harness")
    parser.add_argument("--keep", action="store_true", help="keep the fixtures and run directories (printed path)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before a process is killed (1800)")
    parser.add_argument("--engine-reeval", nargs=2, metavar=("EVAL_YAML", "RUN_DIR"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# Benchmarks with a script and options of their own (see each docstring), by --only name.
SUITES = {"reeval5": "reeval_bench.py", "query": "query_bench.py", "workspace": "workspace_bench.py",
          "http": "http_bench.py", "store": "store_bench.py", "dagster": "dagster_bench.py",
          "incremental": "incremental_bench.py"}
# Options passed on by --all to the suites that have them (workspace_bench has no peer).
SHARED_OPTIONS = {"reeval5": ("--skip-peer", "--keep", "--quick"), "query": ("--skip-peer", "--keep"),
                  "workspace": ("--quick",), "http": ("--skip-peer", "--keep", "--quick"), "store": ("--quick",),
                  "dagster": ("--quick",), "incremental": ("--keep", "--quick")}


def run_suite(name: str, args: list[str]) -> int:
    """One suite as its own process (its exit code), so a crash in one leaves the others to run."""
    print(f"\n==== {name}: benchmarks/{SUITES[name]} {' '.join(args)}", flush=True)
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / SUITES[name]), *args], check=False).returncode


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--only" in argv and argv.index("--only") + 1 < len(argv) and argv[argv.index("--only") + 1] in SUITES:
        name = argv[argv.index("--only") + 1]
        return run_suite(name, [a for a in argv if a not in ("--only", name)])
    if "--all" in argv:
        rest = [a for a in argv if a != "--all"]
        codes = [main(rest)]
        codes += [run_suite(name, [a for a in rest if a in SHARED_OPTIONS[name]]) for name in SUITES]
        return max(codes)
    args = parse_args(argv)
    if args.engine_reeval:
        engine_reeval(*args.engine_reeval)
        return 0

    find_fixture_script()
    tools = [Tool(OURS, find_our_evalh())]
    peer = None if args.skip_peer else find_peer_evalh()
    if peer is not None:
        tools.append(Tool(PEER, peer))
    n_run, n_big, n_small = (1000, 1000, 100) if args.quick else (10_000, 100_000, 10_000)
    sizes = {"run": n_run, "scale_big": n_big, "scale_small": n_small}
    print(f"ours: {tools[0].evalh} (commit {git_commit()})\npeer: {peer or 'not run'}\nlogs: {LOGS}\n"
          f"cpus: {os.cpu_count()}, load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)

    root = Path(tempfile.mkdtemp(prefix="evalh-bench-"))
    shutil.rmtree(LOGS, ignore_errors=True)
    measurements: list[Measurement] = []
    try:
        if args.only in (None, "run", "reeval"):
            measurements += scenario_run(tools, root, n_run, args.timeout)
        if args.only in (None, "reeval"):
            measurements += scenario_reeval(tools, measurements, args.timeout)
        if args.only in (None, "scale"):
            measurements += scenario_scale(tools, root, n_big, n_small, args.timeout)
    finally:
        if args.keep:
            print(f"\nfixtures kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    comps = comparisons(measurements)
    checks = targets(measurements, n_run, n_big, n_small)
    print_report(measurements, comps, checks, args.quick)
    print(f"\nJSON: {write_json(measurements, comps, checks, args, sizes)}")
    return 0 if all(m.ok for m in measurements) else 1


if __name__ == "__main__":
    sys.exit(main())
