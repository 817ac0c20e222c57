#!/usr/bin/env python3
"""Scale-out (issue 34): one eval run on 1 and on 2 celery workers, the team deployment on loopback.

    ./dev bench --only scaleout --keep            # 100k x 2 (no latency) and 20k x 2 (200 ms), 1 and 2 workers
    python benchmarks/scaleout_bench.py --quick   # 2,000 x 2 and 400 x 2: a smoke check of the benchmark itself

Everything the tests of tests/deploy start, started here: a PostgreSQL from Debian's package
as the Dagster instance (deploy/dagster.yaml), a redis-server as the broker, moto's S3 server
as the run folder (`output: s3://…`), and N celery workers, each in a folder of its own
(deploy/dagster_celery_config.py; tests/support/celery_workers.py). `evalh run` of the
make_fixture.py fixture with `run.executor: {type: celery}` and `run.shards` = N is timed as
a whole process (wall: from its start until it is reaped, Dagster and the S3 uploads
included). After each run its files are copied from the S3 API into a local folder
(`run_dir`), and the bench checks what the issue asks: the traces are one per cell, which
worker processes made them (`extra.executor`), and that the summary of every run of one
fixture concludes the same (pass counts, regressions, p-values).

Figures: benchmarks/out/scaleout.json, `runs: [{fixture, cases, workers, shards, latency_s,
wall_s, run_dir, executor_pids, cells, unique_cells, summary_equal, load}]`; the load
average is printed with each figure. With --keep the run folders stay under
benchmarks/out/scaleout/ (else they are removed and run_dir names where they were).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measuring as bench  # noqa: E402 - the shared measuring helpers (re-execs under .venv if needed)

sys.path.insert(0, str(bench.REPO))  # the deployment tests' servers and workers (tests/support)

# (name, cases, latency s): the fixtures, and --quick's.
FIXTURES = [("cpu_100k", 100_000, 0.0), ("latency_20k", 20_000, 0.2)]
QUICK_FIXTURES = [("cpu_2k", 2_000, 0.0), ("latency_400", 400, 0.2)]
WORKER_COUNTS = (1, 2)
OUT_FILE = bench.OUT / "scaleout.json"
KEPT = bench.OUT / "scaleout"


def celery_fixture(folder: Path, n: int, latency_s: float, bucket: str, shards: int) -> Path:
    """make_fixture.py's eval, on celery with ``shards`` shards, publishing to ``bucket``."""
    bench.make_fixture(folder, n, latency_s)
    path = folder / "eval.yaml"
    text = path.read_text()
    runs = text[text.index("    path: "):].split("\n", 1)[0]
    text = text.replace(runs, f"    path: {bucket}/runs")
    text = text.replace("  max_concurrency: 64\n", f"  max_concurrency: 64\n  executor: {{type: celery}}\n"
                                                   f"  shards: {shards}\n")
    path.write_text(text)
    return path


def copy_run(fs, run_url: str, target: Path) -> Path:
    """The finished run's files, from the S3 API into ``target`` (its hidden step values left out)."""
    shutil.rmtree(target, ignore_errors=True)
    root = run_url.removeprefix("s3://").rstrip("/")
    for remote in fs.find(root):
        relative = remote[len(root) + 1:]
        if relative.startswith("."):
            continue
        local = target / relative
        local.parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(remote, str(local))
    return target


def group_cpu_s(pgid: int) -> float:
    """The CPU seconds (user + system) of the live processes of process group ``pgid`` (a worker and its pool)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


STEP_TIMES = """
import json
from dagster import DagsterInstance
instance = DagsterInstance.get()
record = instance.get_run_records()[0]
run = record.dagster_run
steps = [{"step": s.step_key, "start": s.start_time, "end": s.end_time, "status": str(s.status)}
         for s in instance.get_run_step_stats(run.run_id)]
print(json.dumps({"created": record.create_timestamp.timestamp(), "start": record.start_time,
                  "end": record.end_time, "steps": steps}))
"""


def step_times(env: dict[str, str]) -> dict:
    """The Dagster run's start and end and each step's, from the run's instance (seconds from the run's creation)."""
    import subprocess

    done = subprocess.run([bench.our_python(), "-c", STEP_TIMES], env=env, capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    raw = json.loads(done.stdout)
    zero = raw["created"]

    def rel(value: float | None) -> float | None:
        return None if value is None else round(value - zero, 2)

    return {"run": [rel(raw["start"]), rel(raw["end"])],
            "steps": {s["step"].split("__", 1)[-1]: [rel(s["start"]), rel(s["end"]), s["status"].split(".")[-1]]
                      for s in sorted(raw["steps"], key=lambda s: s["start"] or 0)}}


def verdicts(run_dir: Path) -> dict:
    import yaml

    from tests.support.deployment import verdicts as summary_verdicts

    return summary_verdicts(yaml.safe_load((run_dir / "summary.yaml").read_text()))


def one_run(name: str, n: int, latency_s: float, workers: int, servers: dict, root: Path, keep: bool,
            timeout_s: float) -> dict:
    """`evalh run` of the fixture on ``workers`` celery workers; its figures and checks."""
    from tests.support.celery_workers import celery_workers
    from tests.support.deployment import TEAM_YAML
    from tests.support.s3_server import S3Server

    s3_process = servers["s3"]
    s3 = S3Server(s3_process.endpoint)
    bucket = s3.make_bucket(f"scaleout-{uuid.uuid4().hex[:8]}")
    s3_cpu_before = s3_process.cpu_s()
    evals = root / f"{name}-{workers}w" / "evals"
    path = celery_fixture(evals / "bench", n, latency_s, bucket, shards=workers)
    shared = {**os.environ, **servers["postgres"], **s3.env(), "EVALH_CELERY_BROKER": servers["redis"],
              "EVALH_EVALS_DIR": str(evals)}
    home = root / f"{name}-{workers}w" / "dagster_home"
    home.mkdir(parents=True)
    shutil.copy(TEAM_YAML, home / "dagster.yaml")
    launcher = bench.with_bytecode({**shared, "DAGSTER_HOME": str(home),
                                    "EVALH_CACHE_DIR": str(root / f"{name}-{workers}w" / "cache")},
                                   bench.our_python(), path.parent)
    with celery_workers(workers, servers["redis"], shared, TEAM_YAML) as started:
        m = bench.measure_process(name, f"{workers}w", [str(bench.find_our_evalh()), "run", str(path)],
                                  cwd=path.parent, env=launcher, timeout_s=timeout_s, memory=False)
        workers_cpu = [round(group_cpu_s(w.proc.pid), 2) for w in started]
    s3_cpu, s3_counts = s3_process.cpu_s() - s3_cpu_before, s3_process.counts()
    fs = s3.filesystem()
    listed = fs.ls(f"{bucket}/runs") if fs.exists(f"{bucket}/runs") else []
    target = (KEPT if keep else root / "copies") / f"{name}-{workers}w"
    run_dir = copy_run(fs, f"s3://{listed[0]}", target) if listed else None
    record = {"fixture": name, "cases": n, "latency_s": latency_s, "workers": workers, "shards": workers,
              "wall_s": m.wall_s, "ok": m.ok, "note": m.note, "log": m.log, "load": m.load,
              "run_dir": str(run_dir) if run_dir else None, "launcher_cpu_s": m.cpu_s,
              "workers_cpu_s": workers_cpu, "s3_cpu_s": round(s3_cpu, 2), "s3_requests": s3_counts, "steps": step_times(launcher)}
    if run_dir is not None and (run_dir / "summary.yaml").exists():
        pids, cells, lines = set(), set(), 0
        with (run_dir / "traces.jsonl").open() as traces:
            for line in traces:
                trace = json.loads(line)
                pids.add(trace["extra"]["executor"]["pid"])
                cells.add((trace["case_id"], trace["variant_name"], trace.get("sample", 0)))
                lines += 1
        record.update(executor_pids=len(pids), cells=lines, unique_cells=len(cells), verdicts=verdicts(run_dir))
    else:
        record["ok"], record["note"] = False, record["note"] or "no summary.yaml at the run's URL"
    print(f"  [{name}] N={n:,} x 2, LAT={latency_s:g} s, {workers} worker(s): wall {m.wall_s:.2f} s, "
          f"{record.get('executor_pids', 0)} executor process(es), {record.get('unique_cells', 0):,} cells  "
          f"{'ok' if record['ok'] else 'FAILED: ' + record['note'] + ' (' + m.log + ')'}  "
          f"(load average {' '.join(f'{x:.2f}' for x in m.load)})", flush=True)
    steps = record["steps"].get("steps", {})
    print(f"    launcher CPU {m.cpu_s:.1f} s, workers CPU {workers_cpu} s, S3 server CPU {s3_cpu:.1f} s; "
          f"Dagster run {record['steps'].get('run')}", flush=True)
    print("    S3: " + ", ".join(f"{method} {c['requests']} req in {c['bytes_in'] / 1e6:.1f} MB out "
                                f"{c['bytes_out'] / 1e6:.1f} MB" for method, c in sorted(s3_counts.items())), flush=True)
    for step, (start, end, status) in steps.items():
        took = f"{end - start:6.2f} s" if start is not None and end is not None else "   ?"
        print(f"    {step:40s} {start} -> {end}  {took}  {status}", flush=True)
    if not keep:
        shutil.rmtree(root / f"{name}-{workers}w", ignore_errors=True)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke check of the benchmark")
    parser.add_argument("--keep", action="store_true", help=f"keep the runs' local copies under {KEPT}")
    parser.add_argument("--only", action="append", help="only this fixture (cpu_100k, latency_20k; repeatable)")
    parser.add_argument("--pairs", type=int, default=1, help="measure 1 then 2 workers this many times")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per `evalh run`")
    args = parser.parse_args(argv)

    from tests.postgres_server import fresh_schema, postgres_bin, running_postgres
    from tests.support.redis_server import free_port, redis_server_bin, running_redis
    from s3_process import running_s3_process

    if postgres_bin() is None or redis_server_bin() is None:
        print("scaleout needs PostgreSQL and redis-server (apt-get install postgresql redis-server)", file=sys.stderr)
        return 2
    import psycopg

    fixtures = [f for f in (QUICK_FIXTURES if args.quick else FIXTURES) if not args.only or f[0] in args.only]
    print(f"== scaleout: {', '.join(f'{f[0]} ({f[1]:,} x 2, LAT={f[2]:g} s)' for f in fixtures)} on "
          f"{' and '.join(map(str, WORKER_COUNTS))} celery worker(s); cpus: {os.cpu_count()}, {bench.load_text()}",
          flush=True)
    root = Path(tempfile.mkdtemp(prefix="evalh-scaleout-"))
    runs: list[dict] = []
    started = time.time()
    try:
        port = free_port()
        with running_postgres(tcp_port=port) as dsn, running_redis() as redis:
            for name, n, latency_s in fixtures:
                for workers in [w for _ in range(args.pairs) for w in WORKER_COUNTS]:
                    db = fresh_schema()  # a fresh instance per run: no run's history weighs on the next
                    with psycopg.connect(dsn, autocommit=True) as conn:
                        conn.execute(f"CREATE DATABASE {db}")
                    postgres = {"DAGSTER_PG_USERNAME": "postgres", "DAGSTER_PG_PASSWORD": "unused",
                                "DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": str(port), "DAGSTER_PG_DB": db}
                    # A fresh S3 server per run, in a process of its own: its CPU and requests are the run's.
                    with running_s3_process(root / f"s3-{name}-{workers}w.json") as s3:
                        runs.append(one_run(name, n, latency_s, workers,
                                            {"postgres": postgres, "redis": redis, "s3": s3}, root, args.keep,
                                            args.timeout))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name, *_ in fixtures:
        mine = [r for r in runs if r["fixture"] == name and "verdicts" in r]
        for record in mine:
            record["summary_equal"] = all(r["verdicts"] == mine[0]["verdicts"] for r in mine)
        walls = {r["workers"]: r["wall_s"] for r in mine}
        if 1 in walls and 2 in walls:
            print(f"  {name}: speed-up on 2 workers over 1: {walls[1] / walls[2]:.2f}x", flush=True)
    bench.OUT.mkdir(parents=True, exist_ok=True)
    OUT_FILE.write_text(json.dumps({"commit": bench.git_commit(), "quick": args.quick, "cpus": os.cpu_count(),
                                    "seconds": time.time() - started, "runs": runs}, indent=2) + "\n")
    print(f"figures: {OUT_FILE}", flush=True)
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
