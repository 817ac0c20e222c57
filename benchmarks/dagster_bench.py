#!/usr/bin/env python3
"""The Dagster path's fixed cost (issue 12): whole processes, ratios in one invocation.

    python benchmarks/dagster_bench.py               # N=10000 x 2 variants, LAT=0.02 (the standard fixture)
    python benchmarks/dagster_bench.py --repeat 3    # each measure 3 times; the median is reported
    python benchmarks/dagster_bench.py --quick       # N=1000 (smoke check)
    ./dev bench --only dagster [--quick] [--repeat 3]

run          `evalh run eval.yaml` (one Dagster run, in process): wall from process start to exit
             with summary.yaml written. Target <= 1.3 x the physical limit N*2*LAT/64 (6.25 s).
             Also shown against the same target: process start to summary.yaml on disk (its
             mtime; the issue's wording), before the run's drift and checks are recorded.
first call   seconds from process start to the first call of the system under test (the stub
             agent writes the time of its first call). Target <= 1.0 s: Dagster's start-up
             overlaps the engine's work (defs/overlap.py) instead of preceding it.
re-evaluate  `evalh re-evaluate --all RUN_DIR`: every one of the run's 20,000 traces re-judged,
             whole process (start to exit). Target <= 1.5 s. The command returns once results,
             summary, drift and gates are on disk and printed; its Dagster run is recorded by a
             background process after (defs/record_after.py), whose end is shown too (no target). Also shown, without a target: `evalh re-evaluate
             RUN_DIR` with nothing changed (it re-judges nothing: issue 16's content hashes), which
             is the fixed cost of the command (imports, Dagster's run and records).
promote      `evalh promote RUN_DIR`, whole process. Target <= 1 s.

Each `evalh` gets the fixture's Dagster instance (created before the clock starts, as a user's
instance exists before their runs). The load average is printed with the figures: on a shared
machine they are only comparable within one invocation (--repeat and the median help).
Results: benchmarks/out/dagster_results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402 - the shared measuring helpers (re-execs under .venv if needed)

RUN_RATIO, FIRST_CALL_S, REEVAL_S, PROMOTE_S = 1.3, 1.0, 1.5, 1.0
FIRST_CALL_HOOK = '''

# Added by benchmarks/dagster_bench.py: record when the system under test is first called.
import os as _os, time as _time
_first_call_written = []
_timed_run = run


async def run(case, variant=None):
    if not _first_call_written:
        _first_call_written.append(True)
        with open(_os.environ["EVALH_BENCH_FIRST_CALL"], "w") as _f:
            _f.write(repr(_time.time()))
    return await _timed_run(case, variant)
'''


def _run_dirs(fixture: Path) -> list[Path]:
    runs = fixture / "runs"
    return [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")] if runs.is_dir() else []


def _list(values: list[float]) -> str:
    return " ".join(f"{v:.2f}" for v in values)


def _timed(cmd: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float) -> tuple[float, int, float]:
    """(wall seconds, exit code, epoch at start) of one whole process."""
    started_epoch = time.time()
    # Wall time only: sampling the tree's memory would take CPU from the measured process.
    wall, _, code = bench.measure(cmd, cwd=cwd, env=env, log=log, timeout_s=timeout, memory=False)
    return wall, code, started_epoch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="N=1000 (a smoke check)")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--repeat", type=int, default=1, help="measure each N times; report the median")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="leave the environment's PYTHONDONTWRITEBYTECODE alone (every timed process then "
                             "compiles the project from source); by default it is compiled once, untimed, as an "
                             "installed package comes")
    parser.add_argument("--compare-src", type=Path, metavar="DIR",
                        help="also measure the evalh_pipeline source tree in DIR (e.g. an older checkout), "
                             "on a fresh copy of the fixture, in this same invocation")
    args = parser.parse_args(argv)
    results = measure_all(args, None)
    if args.compare_src:
        older = measure_all(args, args.compare_src.resolve())
        print("\nratio this tree / " + str(args.compare_src))
        for mine, theirs in zip(results, older):
            ratio = mine["value"] / theirs["value"] if theirs["value"] else float("nan")
            print(f"{mine['measure']:<24}{mine['value']:>10.2f}{theirs['value']:>10.2f}  x{ratio:.2f}")
    return 0 if all(r["ok"] for r in results) else 1


def measure_all(args: argparse.Namespace, source: Path | None) -> list[dict]:
    """Every measure on a fresh fixture, with this tree's `evalh` or ``source``'s."""
    n, lat = (1000 if args.quick else 10000), 0.02
    limit = n * 2 * lat / 64
    evalh_cmd = [str(bench.find_our_evalh())] if source is None else [sys.executable, "-m", "evalh_pipeline.cli"]
    root = Path(tempfile.mkdtemp(prefix="evalh-dagster-bench-"))
    fixture = bench.make_fixture(root / "fixture", n, lat)
    with (fixture / "stub_agent.py").open("a") as f:
        f.write(FIRST_CALL_HOOK)
    first_call_file = root / "first_call"
    env = {**os.environ, "DAGSTER_HOME": str(bench.fresh_dagster_home(fixture)),
           "EVALH_BENCH_FIRST_CALL": str(first_call_file)}
    tag = "dagster" if source is None else "dagster-compare"
    if source is not None:
        env.update(PYTHONPATH=str(source))
    if not args.no_bytecode_cache:
        env = bench.with_bytecode(env, bench.find_our_evalh().parent / "python", root)
    logs = bench.LOGS
    load_before = os.getloadavg()[0]
    runs, summaries, first_calls, reevals, noops, promotes = [], [], [], [], [], []
    reeval_records, noop_records = [], []
    ok = {"run": True, "reeval": True, "noop": True, "promote": True}
    for _attempt in range(args.repeat):
        first_call_file.unlink(missing_ok=True)
        known = set(_run_dirs(fixture))
        run_wall, run_code, run_start = _timed([*evalh_cmd, "run", "eval.yaml"], fixture, env,
                                               logs / f"{tag}-run.log", args.timeout)
        run_dir = next((d for d in _run_dirs(fixture) if d not in known), None)
        ok["run"] &= run_code == 0 and run_dir is not None and (run_dir / "summary.yaml").exists()
        runs.append(run_wall)
        if run_dir is not None and (run_dir / "summary.yaml").exists():
            summaries.append((run_dir / "summary.yaml").stat().st_mtime - run_start)
        if first_call_file.exists():
            first_calls.append(float(first_call_file.read_text()) - run_start)
        reeval_wall, reeval_code, reeval_start = _timed([*evalh_cmd, "re-evaluate", "--all", str(run_dir)], fixture,
                                                        env, logs / f"{tag}-reeval.log", args.timeout)
        ok["reeval"] &= reeval_code == 0
        reevals.append(reeval_wall)
        # Its Dagster run is recorded after it returned: until the recorder frees the run's lock.
        reeval_records.append(bench.wait_for_recorder(run_dir, args.timeout) - reeval_start)
        noop_wall, noop_code, noop_start = _timed([*evalh_cmd, "re-evaluate", str(run_dir)], fixture, env,
                                                  logs / f"{tag}-reeval-noop.log", args.timeout)
        ok["noop"] &= noop_code == 0
        noops.append(noop_wall)
        noop_records.append(bench.wait_for_recorder(run_dir, args.timeout) - noop_start)
        promote_wall, promote_code, _ = _timed([*evalh_cmd, "promote", str(run_dir)], fixture, env,
                                               logs / f"{tag}-promote.log", args.timeout)
        ok["promote"] &= promote_code == 0
        promotes.append(promote_wall)
    load_after = os.getloadavg()[0]
    median = statistics.median
    run_wall = median(runs)
    first_call = median(first_calls) if first_calls else None
    summary_s = median(summaries) if summaries else float("nan")

    rows = [
        ("evalh run (x limit)", run_wall / limit, RUN_RATIO, ok["run"],
         f"{run_wall:.2f} s, limit {limit:.2f} s; all: {_list(runs)}"),
        ("run: summary on disk (x)", summary_s / limit, RUN_RATIO,
         bool(summaries), f"summary.yaml written {summary_s:.2f} s after "
                          f"process start (the exit waits for drift and checks); all: {_list(summaries)}"),
        ("first system call (s)", first_call if first_call is not None else float("nan"), FIRST_CALL_S,
         first_call is not None, f"after process start; all: {_list(first_calls)}"),
        ("re-evaluate --all (s)", median(reevals), REEVAL_S, ok["reeval"],
         f"{2 * n} traces, start to exit; all: {_list(reevals)}"),
        ("  its Dagster run (s)", median(reeval_records), float("inf"), ok["reeval"],
         f"start to the background recorder's end; all: {_list(reeval_records)}"),
        ("re-evaluate, no change", median(noops), float("inf"), ok["noop"], f"no target; all: {_list(noops)}"),
        ("  its Dagster run (s)", median(noop_records), float("inf"), ok["noop"], f"all: {_list(noop_records)}"),
        ("promote (s)", median(promotes), PROMOTE_S, ok["promote"], f"all: {_list(promotes)}"),
    ]
    print(f"\n{'this tree' if source is None else source}: N={n} x 2 variants, LAT={lat}s, concurrency 64; load average {load_before:.1f} -> {load_after:.1f} "
          f"on {os.cpu_count()} cores; bytecode cache: {'no' if args.no_bytecode_cache else 'yes'}")
    print(f"{'measure':<24}{'value':>10}{'target':>9}  ok  met  note (median of {args.repeat})")
    results = []
    for name, value, target, ok, note in rows:
        met = ok and value == value and value <= target
        shown = f"{target:>9.2f}" if target != float("inf") else f"{'-':>9}"
        verdict = ("yes" if met else "NO") if target != float("inf") else "-"
        print(f"{name:<24}{value:>10.2f}{shown}  {'y' if ok else 'n':>2}  {verdict:>3}  {note}")
        results.append({"measure": name, "value": value, "target": target if target != float("inf") else None, "ok": ok and bool(value == value),
                        "met": met, "note": note})
    out = bench.OUT / ("dagster_results.json" if source is None else "dagster_results_compare.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"n": n, "latency_s": lat, "load": [load_before, load_after], "source": str(source or ""),
                               "commit": bench.git_commit(), "results": results}, indent=2) + "\n")
    print(f"results: {out}; logs: {logs}/dagster-*.log")
    shutil.rmtree(root, ignore_errors=True)
    return results


if __name__ == "__main__":
    sys.exit(main())
