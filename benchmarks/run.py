#!/usr/bin/env python3
"""The speed targets of issue 23, measured in one invocation (`./dev bench`).

    python benchmarks/run.py                     # every scenario below (about 6 minutes on 2 cores)
    python benchmarks/run.py --only floor,stub   # some of them: floor | stub | scale | realistic | realistic1000
    python benchmarks/run.py --quick             # small sizes: a smoke check of the benchmark itself
    python benchmarks/run.py --repeat 9          # rounds of the floor scenario (default 9; median of per-round ratios)
    python benchmarks/run.py --skip-peer         # do not run eval-harness
    python benchmarks/run.py --all               # these, then every other suite (SUITES), one after the other
    python benchmarks/run.py --only reeval5 ...  # one other suite, with its own options

Scenarios (whole processes, Dagster included; each `evalh` has an existing instance whose
storage was created before the clock):

  floor          the Dagster floor (benchmarks/dagster_floor.py: five trivial assets on a dynamic
                 partition, in process) against `evalh run` of a one-case eval and `evalh
                 re-evaluate` of that run (benchmarks/dagster_bench.py), alternated round by round;
                 the median of the per-round ratios, wall and CPU. Targets: each <= 1.3x floor.
  realistic      3,000 cases x 2 variants against a streaming OpenAI-compatible server with
                 lognormal latency, concurrency 200 (benchmarks/http_bench.py): <= 1.05x the ideal
                 schedule; eval-harness 2.0.2 in the same invocation; peak memory reported.
  realistic1000  the same at 20,000 cases x 2, concurrency 1,000 (~900 requests/s): goal <= 1.10x.
                 eval-harness is not run here (about 6x slower; --peer-at-1000 runs it).
  scale          engine throughput: 100,000 and 10,000 cases x 2 variants of a stub agent with no
                 latency (make_fixture.py). Targets: 100k <= 30 s, peak memory <= 300 MB,
                 memory(100k) / memory(10k) <= 1.3.
  stub           the 20 ms stub run, 10,000 cases x 2, concurrency 64 (limit N*2*0.02/64 = 6.25 s):
                 <= 1.6x the limit, a regression check of per-cell overhead.

How it measures: benchmarks/measuring.py (wall from just before the process starts until it
is reaped; memory as the peak PSS of the process tree, sampled every 50 ms, beside the
largest process's ru_maxrss). Every figure is printed with the load average when it was
taken. Results: benchmarks/out/results.json; each process's output: benchmarks/out/logs/.
Exit code: 0 if every measured process succeeded (missed targets are marked NO, not failed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measuring as bench  # noqa: E402 - the shared measuring helpers (re-execs under .venv if needed)

SCENARIOS = ("floor", "stub", "scale", "realistic", "realistic1000")
STUB_LATENCY_S, STUB_CONCURRENCY, STUB_RATIO = 0.02, 64, 1.6
SCALE_WALL_S, SCALE_MEMORY_MB, SCALE_MEMORY_RATIO = 30.0, 300.0, 1.3
# Other benchmarks, each with a script and options of its own (see its docstring), by --only name.
SUITES = {"reeval5": "reeval_bench.py", "query": "query_bench.py", "workspace": "workspace_bench.py",
          "store": "store_bench.py", "incremental": "incremental_bench.py", "isolation": "isolation_bench.py",
          "ratelimit": "ratelimit_bench.py", "scaleout": "scaleout_bench.py"}
# Options passed on by --all to the suites that have them.
SHARED_OPTIONS = {"reeval5": ("--skip-peer", "--keep", "--quick"), "query": ("--skip-peer", "--keep"),
                  "workspace": ("--quick",), "store": ("--quick",), "incremental": ("--keep", "--quick"),
                  "isolation": (), "ratelimit": ("--quick", "--keep"), "scaleout": ("--quick", "--keep")}


def fixture_run(scenario: str, root: Path, n: int, latency_s: float, timeout_s: float) -> bench.Measurement:
    """`evalh run` of a fresh make_fixture.py fixture; ok only if its summary.yaml exists."""
    fixture = bench.make_fixture(root / scenario, n, latency_s)
    env = bench.with_bytecode({**os.environ, "DAGSTER_HOME": str(bench.fresh_dagster_home(fixture))},
                              bench.our_python(), fixture)
    m = bench.measure_process(scenario, bench.OURS, [str(bench.find_our_evalh()), "run", "eval.yaml"], cwd=fixture,
                              env=env, timeout_s=timeout_s)
    run_dir = bench.find_run_dir(fixture)
    if m.ok and (run_dir is None or not (run_dir / "summary.yaml").exists()):
        m.ok, m.note = False, "no summary.yaml"
    print(f"  [{scenario}] N={n:,} x 2, LAT={latency_s:g} s: wall {m.wall_s:.2f} s, peak PSS {m.peak_pss_mb:.0f} MB "
          f"(largest process {m.max_rss_mb:.0f} MB), CPU {m.cpu_s:.2f} s  {'ok' if m.ok else 'FAILED: ' + m.note + ' (' + m.log + ')'}  "
          f"(load average {' '.join(f'{x:.2f}' for x in m.load)})", flush=True)
    shutil.rmtree(fixture, ignore_errors=True)  # 100k runs are large; /tmp is shared
    return m


def stub_scenario(root: Path, n: int, timeout_s: float) -> dict:
    limit = n * 2 * STUB_LATENCY_S / STUB_CONCURRENCY
    print(f"\n== stub: N={n:,} x 2, LAT={STUB_LATENCY_S} s, concurrency {STUB_CONCURRENCY}: limit {limit:.2f} s "
          f"({bench.load_text()})", flush=True)
    m = fixture_run("stub", root, n, STUB_LATENCY_S, timeout_s)
    return {"n": n, "limit_s": limit, "wall_s": m.wall_s, "cpu_s": m.cpu_s, "over_limit": m.wall_s / limit, "peak_pss_mb": m.peak_pss_mb,
            "max_rss_mb": m.max_rss_mb, "ok": m.ok, "note": m.note, "load": m.load}


def scale_scenario(root: Path, n_big: int, n_small: int, timeout_s: float) -> dict:
    print(f"\n== scale: N={n_big:,} and N={n_small:,} x 2, LAT=0 ({bench.load_text()})", flush=True)
    runs = {n: fixture_run(f"scale-{n}", root, n, 0.0, timeout_s) for n in (n_big, n_small)}
    return {str(n): {"wall_s": m.wall_s, "cpu_s": m.cpu_s, "peak_pss_mb": m.peak_pss_mb, "max_rss_mb": m.max_rss_mb, "ok": m.ok,
                     "note": m.note, "load": m.load} for n, m in runs.items()}


# --------------------------------------------------------------------------- targets


def _row(name: str, value: float | None, target: float | None, unit: str, load: tuple | list | None,
         note: str = "") -> dict:
    """One figure against its target (None: shown for comparison, no target)."""
    return {"check": name, "value": value, "target": target, "unit": unit,
            "met": None if target is None else value is not None and value <= target,
            "load": list(load) if load else None, "note": note}


def targets(results: dict, sizes: dict) -> list[dict]:
    """One row per target, from whatever scenarios ran."""
    rows = []
    floor = results.get("floor")
    if floor and "run_over_floor" in floor:
        last = floor["rounds"][-1]["reeval"]["load"]
        for key, label in (("run", "evalh run (1 case)"), ("reeval", "evalh re-evaluate")):
            wall, cpu = floor[f"{key}_over_floor"]["wall"], floor[f"{key}_over_floor"]["cpu"]
            rows.append(_row(f"{label} / Dagster floor", wall["median"], 1.3, "x", last,
                             f"median of {floor['repeat']} per-round ratios, {wall['min']:.2f}-{wall['max']:.2f}; "
                             f"CPU {cpu['median']:.3f}x ({cpu['min']:.2f}-{cpu['max']:.2f})"))
    for key in ("realistic", "realistic1000"):
        found = results.get(key)
        if not found:
            continue
        ours = found["tools"].get(bench.OURS)
        label = f"{found['cases']:,}x2 c{found['concurrency']}"
        if ours and ours["ok"]:
            rows.append(_row(f"realistic {label} / ideal schedule", ours["over_ideal"], found["target"], "x",
                             ours["load"], f"{ours['wall_s']:.2f} / {found['ideal_s']:.2f} s, peak PSS "
                                           f"{ours['peak_pss_mb']:.0f} MB"))
        peer = found["tools"].get(bench.PEER)
        if peer and peer["ok"]:
            rows.append(_row(f"  eval-harness {label} / ideal", peer["over_ideal"], None, "x", peer["load"],
                             f"{peer['wall_s']:.2f} s, peak PSS {peer['peak_pss_mb']:.0f} MB"))
    scale = results.get("scale")
    if scale:
        big, small = scale[str(sizes["scale_big"])], scale[str(sizes["scale_small"])]
        if big["ok"]:
            rows.append(_row(f"scale {sizes['scale_big']:,}x2 wall", big["wall_s"], SCALE_WALL_S, "s", big["load"]))
            rows.append(_row(f"scale {sizes['scale_big']:,}x2 peak PSS", big["peak_pss_mb"], SCALE_MEMORY_MB, "MB",
                             big["load"], f"largest process {big['max_rss_mb']:.0f} MB"))
            if small["ok"]:
                rows.append(_row(f"memory {sizes['scale_big']:,} / {sizes['scale_small']:,}",
                                 big["peak_pss_mb"] / small["peak_pss_mb"], SCALE_MEMORY_RATIO, "x", small["load"],
                                 f"{big['peak_pss_mb']:.0f} / {small['peak_pss_mb']:.0f} MB"))
    stub = results.get("stub")
    if stub and stub["ok"]:
        rows.append(_row(f"stub {stub['n']:,}x2 20 ms / limit", stub["over_limit"], STUB_RATIO, "x", stub["load"],
                         f"{stub['wall_s']:.2f} / {stub['limit_s']:.2f} s, peak PSS {stub['peak_pss_mb']:.0f} MB"))
    return rows


def print_targets(rows: list[dict], quick: bool) -> None:
    print("\n== targets" + ("  -- quick mode: sizes too small for these to mean much" if quick else "") + "\n")
    bench.print_table(
        ["check", "value", "target", "met", "load average (1/5/15 min)", "note"],
        [[r["check"], f"{r['value']:.3f} {r['unit']}" if r["unit"] == "x" else f"{r['value']:.2f} {r['unit']}",
          "-" if r["target"] is None else f"<= {r['target']:g} {r['unit']}",
          "-" if r["met"] is None else ("yes" if r["met"] else "NO"),
          " ".join(f"{x:.2f}" for x in r["load"]) if r["load"] else "-", r["note"]] for r in rows])


# --------------------------------------------------------------------------- main


def run_suite(name: str, args: list[str]) -> int:
    """One other suite as its own process (its exit code), so a crash in one leaves the others to run."""
    print(f"\n==== {name}: benchmarks/{SUITES[name]} {' '.join(args)}", flush=True)
    return subprocess.run([sys.executable, str(Path(__file__).resolve().parent / SUITES[name]), *args],
                          check=False).returncode


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help=f"comma-separated scenarios: {', '.join(SCENARIOS)}")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke check)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="rounds of the floor scenario (default 9; the median of per-round ratios is reported)")
    parser.add_argument("--skip-peer", action="store_true", help="do not run eval-harness")
    parser.add_argument("--peer-at-1000", action="store_true", help="also run eval-harness in realistic1000")
    parser.add_argument("--keep", action="store_true", help="keep the fixtures and run directories (path printed)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before a process is killed (1800)")
    args = parser.parse_args(argv)
    chosen = args.only.split(",") if args.only else list(SCENARIOS)
    unknown = [c for c in chosen if c not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)} (known: {', '.join(SCENARIOS)}; "
                     f"other suites: --only {' | '.join(SUITES)})")
    args.scenarios = [s for s in SCENARIOS if s in chosen]
    return args


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

    import dagster_bench
    import http_bench

    sizes = ({"stub": 1000, "scale_big": 1000, "scale_small": 100, "realistic": (300, 50),
              "realistic1000": (2000, 200)} if args.quick else
             {"stub": 10_000, "scale_big": 100_000, "scale_small": 10_000, "realistic": (3000, 200),
              "realistic1000": (20_000, 1000)})
    peer = None if args.skip_peer else bench.find_peer_evalh()
    ours = (bench.OURS, bench.find_our_evalh())
    print(f"ours: {ours[1]} (commit {bench.git_commit()})\npeer: {peer or 'not run'}\nlogs: {bench.LOGS}\n"
          f"cpus: {os.cpu_count()}, {bench.load_text()}\nscenarios: {', '.join(args.scenarios)}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="evalh-bench-"))
    shutil.rmtree(bench.LOGS, ignore_errors=True)
    results: dict = {}
    server = None
    try:
        if "floor" in args.scenarios:
            results["floor"] = dagster_bench.floor_scenario(
                root, 1 if args.quick else args.repeat or dagster_bench.DEFAULT_REPEAT, args.timeout)
        if "stub" in args.scenarios:
            results["stub"] = stub_scenario(root, sizes["stub"], args.timeout)
        if "scale" in args.scenarios:
            results["scale"] = scale_scenario(root, sizes["scale_big"], sizes["scale_small"], args.timeout)
        for key in ("realistic", "realistic1000"):
            if key not in args.scenarios:
                continue
            server = server or http_bench.Server()
            n, concurrency = sizes[key]
            tools = [ours] + ([(bench.PEER, peer)] if peer and (key == "realistic" or args.peer_at_1000) else [])
            target = None if args.quick else (http_bench.TARGET if key == "realistic" else http_bench.GOAL_AT_1000)
            results[key] = http_bench.realistic_scenario(server, root, n, concurrency, tools, args.timeout, target)
    finally:
        if server is not None:
            server.close()
        if args.keep:
            print(f"\nfixtures kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    rows = targets(results, sizes)
    print_targets(rows, args.quick)
    bench.OUT.mkdir(parents=True, exist_ok=True)
    path = bench.OUT / "results.json"
    path.write_text(json.dumps({
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": bench.git_commit(), "cpus": os.cpu_count(),
        "quick": args.quick, "sizes": sizes, "targets": rows, "results": results,
    }, indent=2, default=str) + "\n")
    print(f"\nJSON: {path}")
    ok = [results["floor"]["ok"]] if "floor" in results else []
    ok += [results["stub"]["ok"]] if "stub" in results else []
    ok += [m["ok"] for m in results.get("scale", {}).values()]
    ok += [t["ok"] for key in ("realistic", "realistic1000") if key in results for t in results[key]["tools"].values()]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
