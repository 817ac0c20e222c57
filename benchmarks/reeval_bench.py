#!/usr/bin/env python3
"""Re-evaluation benchmark (issue 4): 100,000 traces x 5 deterministic evaluators.

    python benchmarks/reeval_bench.py              # reeval5 + the 20k x 2 comparison with eval-harness
    python benchmarks/reeval_bench.py --repeat 3   # each timed process 3 times
    python benchmarks/reeval_bench.py --quick      # 10,000 traces (smoke check)
    ./dev bench --only reeval5 [--repeat 3]        # the same, through ./dev bench (benchmarks/run.py)

reeval5   make_fixture.py N=50000 x 2 variants, LAT=0, with five deterministic evaluators
          (contains_text, tool_called, exact_match, regex_match, latency_under): 100,000
          traces, 500,000 results. Target: `evalh re-evaluate` <= 5 s end to end.
reeval2   make_fixture.py N=10000 (its own two evaluators): 20,000 traces x 2 = 40,000 results,
          the issue's comparison; eval-harness 2.0.2 re-evaluates it when installed
          (/tmp/ehvenv/bin/evalh or $EVAL_HARNESS_EVALH), in the same invocation.

Traces are produced untimed, in-process (no judging), and judged once untimed, so every timed
re-evaluation replaces existing results. Timed: the CLI (`evalh re-evaluate RUN_DIR`, whole
process: imports, Dagster instance and runs, judging, summary) and the engine alone
(`evaluate_traces`, then `write_summary`, in a fresh process; import time reported apart).
Each line prints evaluations/s (results written / wall). Measured like run.py (wall to
process exit, psutil peak RSS of the process tree); results in benchmarks/out/reeval_results.json.
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

TARGET_S = 5.0
FIVE_EVALUATORS = """evaluators:
  - name: calls_listing_tool
    type: tool_called
    config: {tool_name: get_listing_details}
  - name: mentions_suburb
    type: contains_text
    config: {any_of: [Richmond, Brunswick, Carlton, Fitzroy]}
  - name: exact_tool
    type: exact_match
    config: {field: "tool_calls[0].name", expected: get_listing_details}
  - name: answer_shape
    type: regex_match
    config: {pattern: 'Listing L\\d+ is in (Richmond|Brunswick|Carlton|Fitzroy)'}
  - name: fast_enough
    type: latency_under
    config: {max_ms: 1000}
run:
"""


def five_evaluators(fixture: Path) -> None:
    """Replace the fixture's two evaluators with the five deterministic ones."""
    path = fixture / "eval.yaml"
    text = path.read_text()
    start, end = text.index("evaluators:\n"), text.index("run:\n")
    path.write_text(text[:start] + FIVE_EVALUATORS + text[end + len("run:\n"):])


def produce(fixture: Path, timeout_s: float) -> Path:
    """Our traces for the fixture, made in-process without judging (untimed); the run directory."""
    python = bench.find_our_evalh().parent / "python"
    started = time.perf_counter()
    out = subprocess.run([str(python), str(Path(__file__).resolve()), "--produce", str(fixture / "eval.yaml")],
                         cwd=fixture, capture_output=True, text=True, timeout=timeout_s, check=True)
    run_dir = Path(out.stdout.strip().splitlines()[-1])
    print(f"  traces produced in {time.perf_counter() - started:.1f} s (untimed): {run_dir}", flush=True)
    return run_dir


def produce_main(eval_yaml: str) -> None:
    """Child entry point: prepare a run and produce its traces (the traces stage judges nothing)."""
    import asyncio

    sys.path.insert(0, str(Path(eval_yaml).resolve().parent))
    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.runner.stages import prepare_cases
    from evalh_pipeline.runner.traces import produce_traces
    from evalh_pipeline.store.run_dir import new_run_id

    spec = load_eval(eval_yaml)
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    print(info.run_dir.path)


def engine_main(eval_yaml: str, run_dir: str) -> None:
    """Child entry point: time evaluate_traces and write_summary in-process, print JSON."""
    import asyncio

    started = time.perf_counter()
    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.runner.evaluation import evaluate_traces
    from evalh_pipeline.runner.stages import write_summary
    from evalh_pipeline.store.run_dir import RunDirectory

    spec = load_eval(eval_yaml)
    directory = RunDirectory(Path(run_dir))
    imported = time.perf_counter()
    stats = asyncio.run(evaluate_traces(spec, directory, incremental=False))
    evaluated = time.perf_counter()
    write_summary(spec, directory)
    summarized = time.perf_counter()
    print(json.dumps({"import_s": imported - started, "evaluate_s": evaluated - imported,
                      "summary_s": summarized - evaluated, "results": stats.results, "traces": stats.traces}))


def count_results(run_dir: Path) -> int:
    with (run_dir / "results.jsonl").open("rb") as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 22), b""))


def timed_cli(scenario: str, tool: bench.Tool, fixture: Path, run_dir: Path, env: dict, n: int,
              timeout_s: float, rep: int) -> bench.Measurement:
    # --all: every timed pass re-judges everything (an unchanged config would re-judge nothing).
    cmd = [str(tool.evalh), "re-evaluate", *(["--all"] if tool.name == bench.OURS else []), str(run_dir)]
    return bench.measure_process(scenario, tool.name, cmd, cwd=fixture, env=env, timeout_s=timeout_s,
                                 log_name=f"{scenario}-{tool.name}-{rep}")


def timed_engine(scenario: str, tool: bench.Tool, fixture: Path, run_dir: Path, n: int, timeout_s: float,
                 rep: int) -> bench.Measurement:
    python = tool.evalh.parent / "python"
    cmd = [str(python), str(Path(__file__).resolve()), "--engine", str(fixture / "eval.yaml"), str(run_dir)]
    env = {**os.environ, "PYTHONPATH": str(fixture)}
    m = bench.measure_process(scenario, "ours-engine", cmd, cwd=fixture, env=env, timeout_s=timeout_s,
                              log_name=f"{scenario}-engine-{rep}")
    if m.ok:
        m.extra = json.loads(Path(m.log).read_text().strip().splitlines()[-1])
    return m


def report(m: bench.Measurement, results: int) -> None:
    rate = results / m.wall_s if m.ok else 0.0
    m.extra = {**m.extra, "results": results, "evaluations_per_s": rate}
    status = "ok" if m.ok else f"FAILED ({m.note}; see {m.log})"
    line = f"  [{m.scenario}] {m.tool:<12} wall {m.wall_s:6.2f} s  {rate:9,.0f} evaluations/s  peak PSS {m.peak_pss_mb:5.0f} MB  {status}"
    if m.tool == "ours-engine" and m.ok:
        e = m.extra
        line += (f"\n           in-process: import {e['import_s']:.2f} s, evaluate_traces {e['evaluate_s']:.2f} s "
                 f"({e['results'] / e['evaluate_s']:,.0f} evaluations/s), write_summary {e['summary_s']:.2f} s")
    print(line, flush=True)


def scenario(name: str, n_cases: int, five: bool, tools: list[bench.Tool], root: Path, args) -> list[bench.Measurement]:
    """Fixture, traces per tool (untimed), one untimed warm-up pass, then the timed repeats."""
    print(f"\n== {name}: {n_cases} cases x 2 variants, {'5' if five else '2'} evaluators", flush=True)
    prepared = []
    for tool in tools:
        fixture = bench.make_fixture(root / name / tool.name, n_cases, 0.0)
        if five:
            five_evaluators(fixture)
        env = tool.env(fixture)
        if tool.name == bench.OURS:
            run_dir = produce(fixture, args.timeout)
        else:
            started = time.perf_counter()
            cmd = [str(tool.evalh), "run", str(fixture / "eval.yaml")]
            subprocess.run(cmd, cwd=fixture, env=env, capture_output=True, timeout=args.timeout, check=True)
            run_dir = bench.find_run_dir(fixture)
            print(f"  {tool.name}: its run took {time.perf_counter() - started:.1f} s (untimed): {run_dir}", flush=True)
        # Warm-up (untimed): page cache, and every timed pass replaces existing results.
        subprocess.run([str(tool.evalh), "re-evaluate", *(["--all"] if tool.name == bench.OURS else []), str(run_dir)],
                       cwd=fixture, env=env,
                       capture_output=True, timeout=args.timeout, check=True)
        prepared.append((tool, fixture, run_dir, env))
    measurements = []
    for rep in range(args.repeat):
        # Interleaved, so both tools see the same machine load.
        for tool, fixture, run_dir, env in prepared:
            m = timed_cli(name, tool, fixture, run_dir, env, n_cases * 2, args.timeout, rep)
            per_pass = n_cases * 2 * (5 if five else 2)  # eval-harness appends, so count what one pass writes
            report(m, per_pass)
            measurements.append(m)
            if tool.name == bench.OURS:
                m_engine = timed_engine(name, tool, fixture, run_dir, n_cases * 2, args.timeout, rep)
                report(m_engine, m_engine.extra.get("results", 0) if m_engine.ok else 0)
                measurements.append(m_engine)
                if rep == 0:
                    written = count_results(run_dir)
                    if written != per_pass:
                        print(f"  WARNING: results.jsonl has {written} lines, expected {per_pass}", flush=True)
    return measurements


def summarize(measurements: list[bench.Measurement], n_five: int) -> list[dict]:
    rows = []

    def best(scenario: str, tool: str) -> bench.Measurement | None:
        ok = [m for m in measurements if m.scenario == scenario and m.tool == tool and m.ok]
        return min(ok, key=lambda m: m.wall_s, default=None)

    print("\n== summary (best of the repeats; wall = whole process)\n")
    for m in [best(s, t) for s in ("reeval5", "reeval2") for t in (bench.OURS, "ours-engine", bench.PEER)]:
        if m is not None:
            walls = [x.wall_s for x in measurements if x.scenario == m.scenario and x.tool == m.tool and x.ok]
            print(f"  {m.scenario:<8} {m.tool:<12} best {m.wall_s:6.2f} s  all {', '.join(f'{w:.2f}' for w in walls)}  "
                  f"{m.extra['evaluations_per_s']:9,.0f} evaluations/s")
    ours5 = best("reeval5", bench.OURS)
    if ours5:
        rows.append({"check": f"re-evaluate {n_five} traces x 5 evaluators (CLI)", "value": ours5.wall_s,
                     "target": TARGET_S, "ok": ours5.wall_s <= TARGET_S})
        print(f"\n  target: reeval5 CLI {ours5.wall_s:.2f} s <= {TARGET_S:g} s: {'yes' if ours5.wall_s <= TARGET_S else 'NO'}")
    ours2, peer2 = best("reeval2", bench.OURS), best("reeval2", bench.PEER)
    if ours2 and peer2:
        ratio = ours2.wall_s / peer2.wall_s
        rows.append({"check": "reeval2 wall ours / eval-harness", "value": ratio})
        print(f"  reeval2 (20k x 2): ours {ours2.wall_s:.2f} s / eval-harness {peer2.wall_s:.2f} s = {ratio:.2f}")
    if ours5 and peer2:
        ratio = ours5.extra["evaluations_per_s"] / peer2.extra["evaluations_per_s"]
        rows.append({"check": "evaluations/s reeval5 ours / reeval2 eval-harness", "value": ratio})
        print(f"  evaluations/s: ours on reeval5 / eval-harness on reeval2 = {ratio:.1f}x")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Re-evaluation benchmark: 100k traces x 5 deterministic evaluators.")
    parser.add_argument("--quick", action="store_true", help="10,000 traces for reeval5, 2,000 for reeval2")
    parser.add_argument("--repeat", type=int, default=1, help="timed passes per tool (default 1)")
    parser.add_argument("--skip-peer", action="store_true", help="do not run eval-harness")
    parser.add_argument("--only", choices=["reeval5", "reeval2"], help="one scenario")
    parser.add_argument("--keep", action="store_true", help="keep the fixtures (path printed)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--produce", metavar="EVAL_YAML", help=argparse.SUPPRESS)
    parser.add_argument("--engine", nargs=2, metavar=("EVAL_YAML", "RUN_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.produce:
        produce_main(args.produce)
        return 0
    if args.engine:
        engine_main(*args.engine)
        return 0

    ours = bench.Tool(bench.OURS, bench.find_our_evalh())
    peer_path = None if args.skip_peer else bench.find_peer_evalh()
    n5, n2 = (5_000, 1_000) if args.quick else (50_000, 10_000)
    print(f"ours: {ours.evalh} (commit {bench.git_commit()})\npeer: {peer_path or 'not run'}\n"
          f"cpus: {os.cpu_count()}, load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="evalh-reeval-bench-"))
    bench.LOGS.mkdir(parents=True, exist_ok=True)
    measurements: list[bench.Measurement] = []
    try:
        if args.only in (None, "reeval5"):
            measurements += scenario("reeval5", n5, True, [ours], root, args)
        if args.only in (None, "reeval2"):
            tools = [ours] + ([bench.Tool(bench.PEER, peer_path)] if peer_path else [])
            measurements += scenario("reeval2", n2, False, tools, root, args)
    finally:
        if args.keep:
            print(f"\nfixtures kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    rows = summarize(measurements, n5 * 2)
    bench.OUT.mkdir(parents=True, exist_ok=True)
    path = bench.OUT / "reeval_results.json"
    path.write_text(json.dumps({
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": bench.git_commit(), "cpus": os.cpu_count(),
        "loadavg_at_end": os.getloadavg(), "quick": args.quick, "repeat": args.repeat,
        "measurements": [m.__dict__ for m in measurements], "checks": rows,
    }, indent=2, default=str) + "\n")
    print(f"\nJSON: {path}")
    return 0 if all(m.ok for m in measurements) else 1


if __name__ == "__main__":
    sys.exit(main())
