#!/usr/bin/env python3
"""Dagster's fixed cost (issue 23): `evalh run` and `evalh re-evaluate` of a one-case eval
against the Dagster floor, whole processes, ratios measured in one invocation.

    python benchmarks/dagster_bench.py [--repeat 5]     # also part of `python benchmarks/run.py`

floor        benchmarks/dagster_floor.py: a fresh process that materializes a chain of five
             trivial assets on a new dynamic partition, in process, against an existing
             instance (evalh's dagster.yaml, storage created before the clock).
run          `evalh run eval.yaml` of a one-case eval (make_fixture.py N=1, LAT=0: one case x
             2 variants, 2 evaluators): a new partition, cases -> traces -> results -> summary
             -> drift and their checks, one Dagster run. Target <= 1.3 x floor.
re-evaluate  `evalh re-evaluate RUN_DIR` of that run: results, summary, drift of its
             partition. Target <= 1.3 x floor.

Each tool has its own existing instance. One untimed round first (page cache, bytecode),
then ``--repeat`` rounds, each timing floor, run and re-evaluate back to back so all three
see the same load; the ratio is of the medians, and every round's ratios are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measuring as bench  # noqa: E402 - the shared measuring helpers (re-execs under .venv if needed)

FLOOR_RATIO = 1.3
FLOOR_SCRIPT = Path(__file__).resolve().parent / "dagster_floor.py"


def floor_scenario(root: Path, repeat: int, timeout_s: float) -> dict:
    """Time floor, one-case run and its re-evaluation ``repeat`` times; return the figures."""
    python = bench.our_python()
    evalh = bench.find_our_evalh()
    fixture = bench.make_fixture(root / "one-case", 1, 0.0)
    floor_dir = root / "floor"
    floor_dir.mkdir()
    env = bench.with_bytecode(dict(os.environ), python, root)
    floor_env = {**env, "DAGSTER_HOME": str(bench.fresh_dagster_home(floor_dir))}
    evalh_env = {**env, "DAGSTER_HOME": str(bench.fresh_dagster_home(fixture))}
    rounds = []
    print(f"\n== floor: Dagster floor vs `evalh run` / `evalh re-evaluate` of a one-case eval, "
          f"{repeat} rounds after one untimed ({bench.load_text()})", flush=True)
    for index in range(repeat + 1):
        timed = index > 0
        floor = bench.measure_process("floor", "dagster-floor", [str(python), str(FLOOR_SCRIPT), f"p{uuid.uuid4().hex}"],
                                      cwd=floor_dir, env=floor_env, timeout_s=timeout_s, memory=False)
        known = {p for p in (fixture / "runs").glob("*")} if (fixture / "runs").is_dir() else set()
        run = bench.measure_process("floor", "evalh-run", [str(evalh), "run", "eval.yaml"], cwd=fixture,
                                    env=evalh_env, timeout_s=timeout_s, memory=False)
        run_dir = next((p for p in (fixture / "runs").glob("*") if p not in known and p.is_dir()
                        and not p.name.startswith(".")), None)
        if run.ok and (run_dir is None or not (run_dir / "summary.yaml").exists()):
            run.ok, run.note = False, "no summary.yaml"
        reeval = bench.measure_process("floor", "evalh-re-evaluate", [str(evalh), "re-evaluate", str(run_dir)],
                                       cwd=fixture, env=evalh_env, timeout_s=timeout_s, memory=False)
        row = {"floor": floor, "run": run, "reeval": reeval}
        status = "  ".join(f"{k} {m.wall_s:.2f} s (cpu {m.cpu_s:.2f}){'' if m.ok else ' FAILED: ' + m.note + ' (' + m.log + ')'}"
                           for k, m in row.items())
        print(f"  {'round ' + str(index) if timed else 'untimed'}: {status}  ({bench.load_text()})", flush=True)
        if timed:
            rounds.append(row)
    ok = all(m.ok for row in rounds for m in row.values())
    median = {k: statistics.median(row[k].wall_s for row in rounds) for k in ("floor", "run", "reeval")}
    # CPU time moves far less than wall time with other work on the machine: informative.
    cpu = {k: statistics.median(row[k].cpu_s for row in rounds) for k in ("floor", "run", "reeval")}
    figures = {
        "ok": ok, "repeat": repeat, "medians_s": median, "cpu_medians_s": cpu,
        "run_over_floor_cpu": cpu["run"] / cpu["floor"], "reeval_over_floor_cpu": cpu["reeval"] / cpu["floor"],
        "run_over_floor": median["run"] / median["floor"],
        "reeval_over_floor": median["reeval"] / median["floor"],
        "rounds": [{k: {"wall_s": m.wall_s, "cpu_s": m.cpu_s, "ok": m.ok, "load": m.load} for k, m in row.items()}
                   for row in rounds],
        "load_first_last": [rounds[0]["floor"].load, rounds[-1]["reeval"].load] if rounds else [],
    }
    for key in ("run", "reeval"):
        figures[f"{key}_over_floor_rounds"] = [row[key].wall_s / row["floor"].wall_s for row in rounds]
    print(f"  medians: floor {median['floor']:.2f} s, run {median['run']:.2f} s "
          f"({figures['run_over_floor']:.2f}x), re-evaluate {median['reeval']:.2f} s "
          f"({figures['reeval_over_floor']:.2f}x); target <= {FLOOR_RATIO}x\n"
          f"  CPU medians (informative): floor {cpu['floor']:.2f} s, run {cpu['run']:.2f} s "
          f"({figures['run_over_floor_cpu']:.2f}x), re-evaluate {cpu['reeval']:.2f} s "
          f"({figures['reeval_over_floor_cpu']:.2f}x)", flush=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds (median reported)")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="evalh-dagster-bench-"))
    try:
        figures = floor_scenario(root, args.repeat, args.timeout)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    bench.OUT.mkdir(parents=True, exist_ok=True)
    out = bench.OUT / "dagster_results.json"
    out.write_text(json.dumps({"commit": bench.git_commit(), **figures}, indent=2) + "\n")
    print(f"results: {out}")
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
