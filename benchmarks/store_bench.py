#!/usr/bin/env python3
"""Trace store benchmark: a 10k x 2 run synced into SQLite and PostgreSQL, and read back.

    python benchmarks/store_bench.py            # N=10000 cases x 2 variants x 2 evaluators
    python benchmarks/store_bench.py --quick    # N=1000

The run directory is written directly (20k traces with a 200-character input and a
300-character answer, 40k results); each store then takes it as the engine does after a
stage (`write_run`): the first sync writes every row, a second sync with nothing changed
(the cases, summary and drift stages) must cost almost nothing, and `export_run` writes
the run back as a run directory (what `--store` reads). PostgreSQL is a throwaway server
(tests/postgres_server.py; skipped when PostgreSQL is not installed).

Targets (N=10000): first sync <= 5 s (SQLite) and <= 10 s (PostgreSQL); unchanged resync
<= 0.2 s; read back <= 3 s (SQLite) and <= 6 s (PostgreSQL). Results go to
benchmarks/out/store_results.json; the exit code is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGETS = {
    "sqlite": {"first_sync_s": 5.0, "idle_resync_s": 0.2, "export_s": 3.0},
    "postgres": {"first_sync_s": 10.0, "idle_resync_s": 0.2, "export_s": 6.0},
}


def write_run(root: Path, n: int) -> Path:
    run = root / "2026-01-01T00-00-00-000000_bench"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": run.name, "eval_name": "bench", "variants": ["a", "b"]}))
    stamp = "2026-01-01T00:00:00Z"
    with open(run / "traces.jsonl", "w") as traces, open(run / "results.jsonl", "w") as results:
        for i in range(n):
            for variant in ("a", "b"):
                traces.write(json.dumps({
                    "schema_version": "1.0", "run_id": run.name, "case_id": f"c{i:06d}", "variant_name": variant,
                    "sample": 0, "started_at": stamp, "finished_at": stamp, "latency_ms": 1000,
                    "input": {"q": "x" * 200}, "output": {"final_answer": "y" * 300},
                    "metrics": {"token_input": 10, "token_output": 5}, "error": None, "extra": {}}) + "\n")
                for evaluator in ("e1", "e2"):
                    results.write(json.dumps({
                        "schema_version": "1.0", "run_id": run.name, "case_id": f"c{i:06d}", "variant_name": variant,
                        "sample": 0, "evaluator": evaluator, "evaluator_type": "contains_text", "passed": True,
                        "reason": "ok", "started_at": stamp, "finished_at": stamp, "latency_ms": 0}) + "\n")
    return run


def measure(entry: dict, run: Path, root: Path) -> dict:
    from evalh_pipeline.store.run_dir import RunDirectory
    from evalh_pipeline.outputs.stores.base import StoreContext
    from evalh_pipeline.outputs.registry import STORES

    store = STORES.get(entry["type"])({**entry, "run_namespace": {"project": "bench"}}, StoreContext(eval_dir=root))
    try:
        t0 = time.perf_counter()
        store.write_run(RunDirectory(run), "results")
        t1 = time.perf_counter()
        store.write_run(RunDirectory(run), "summary")
        t2 = time.perf_counter()
        store.export_run(run.name, root / f"back-{entry['type']}", {"project": "bench"})
        t3 = time.perf_counter()
    finally:
        store.close()
    return {"first_sync_s": t1 - t0, "idle_resync_s": t2 - t1, "export_s": t3 - t2}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="N=1000")
    parser.add_argument("-n", type=int, default=None)
    args = parser.parse_args()
    n = args.n or (1000 if args.quick else 10_000)
    root = Path(tempfile.mkdtemp(prefix="evalh-store-bench-"))
    figures: dict[str, dict] = {}
    try:
        run = write_run(root, n)
        figures["sqlite"] = measure({"type": "sqlite", "path": str(root / "runs.db")}, run, root)
        from evalh_pipeline.store.run_dir import RunDirectory
        from tests.postgres_server import postgres_bin, running_postgres

        if postgres_bin() is None:
            print("PostgreSQL is not installed: its figures are skipped (apt-get install postgresql)")
        else:
            RunDirectory(run).stores_state.unlink(missing_ok=True)
            with running_postgres() as dsn:
                figures["postgres"] = measure({"type": "postgres", "dsn": dsn}, run, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"N={n} cases x 2 variants ({2 * n} traces, {4 * n} results); load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    missed = 0
    for kind, values in figures.items():
        for key, value in values.items():
            target = TARGETS[kind][key] * (n / 10_000 if key != "idle_resync_s" else 1)
            ok = value <= target
            missed += not ok
            print(f"{kind:9} {key:14} {value:7.2f} s  (target <= {target:.2f} s) {'ok' if ok else 'MISSED'}")
    out = REPO / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "store_results.json").write_text(json.dumps({"n": n, "figures": figures}, indent=2) + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
