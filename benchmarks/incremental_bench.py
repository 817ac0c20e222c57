#!/usr/bin/env python3
"""Incremental re-evaluation benchmark (issue 16): change one of five evaluators on 100,000
traces and re-evaluate; the target is <= 1/4 of the cost of a full re-evaluation.

    python benchmarks/incremental_bench.py              # N=50000 x 2 variants = 100,000 traces
    python benchmarks/incremental_bench.py --quick      # 10,000 traces
    python benchmarks/incremental_bench.py --repeat 3   # best of 3 per measurement
    python benchmarks/incremental_bench.py --changed answer_shape   # a regex_match evaluator changes

The fixture is reeval_bench.py's reeval5: make_fixture.py N x 2 variants, LAT=0, with five
deterministic evaluators (500,000 results). Traces are produced and judged once, untimed.
Then, alternating, each repeat times:

- full:        the whole results file re-judged (`evalh re-evaluate --all`, and the engine
               alone: `evaluate_traces(incremental=False)`);
- incremental: one evaluator's config is changed in eval.yaml (``--changed``; default
               `fast_enough`'s `max_ms`, 1000 <-> 2000) and the run re-evaluated (`evalh
               re-evaluate`, and `evaluate_traces()`): 100,000 results re-judged, 400,000 kept
               byte for byte.
- unchanged:   `evalh re-evaluate` again with nothing changed: the floor every re-evaluation
               pays (interpreter, imports, the summary over the cell store, gates, drift, exit),
               and the incremental pass beyond that floor against the full pass beyond it.

Each is timed as a whole process (wall to exit, like run.py) and, for the engine, also
in-process (evaluate_traces alone, and with write_summary). Ratios are incremental / full;
results in benchmarks/out/incremental_results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))
# reeval_bench and measuring (the benchmark harness) are imported by main() only: the timed engine
# process (--engine) is this script too, and should import what the product imports.
if TYPE_CHECKING:
    import measuring as bench

TARGET_RATIO = 0.25
# The evaluator whose config each incremental pass changes, and its two configs (alternated):
# fast_enough (latency_under) declares the one trace field it reads, so it is re-judged on
# trace projections; answer_shape (regex_match) reads any field, so whole traces are decoded.
CONFIGS = {
    "fast_enough": ("max_ms: 1000}", "max_ms: 2000}"),
    "answer_shape": ("(Richmond|Brunswick|Carlton|Fitzroy)'}", "(Richmond|Brunswick|Carlton|Fitzroy|Carlton)'}"),
}


def change_config(eval_yaml: Path, evaluator: str) -> None:
    """Swap ``evaluator``'s config in eval.yaml between its two variants (CONFIGS)."""
    first, second = CONFIGS[evaluator]
    text = eval_yaml.read_text()
    if second in text:
        text = text.replace(second, first)
    else:
        assert first in text, f"{evaluator}'s config not found in {eval_yaml}"
        text = text.replace(first, second)
    eval_yaml.write_text(text)


def engine_main(eval_yaml: str, run_dir: str, mode: str) -> None:
    """Child entry point: evaluate_traces (full or incremental) then write_summary, timed; JSON out."""
    import asyncio

    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.runner.evaluation import evaluate_traces
    from evalh_pipeline.runner.stages import write_summary
    from evalh_pipeline.store.run_dir import RunDirectory

    spec = load_eval(eval_yaml)
    directory = RunDirectory(Path(run_dir))
    started = time.perf_counter()
    stats = asyncio.run(evaluate_traces(spec, directory, incremental=mode == "incremental"))
    evaluated = time.perf_counter()
    write_summary(spec, directory)
    summarized = time.perf_counter()
    print(json.dumps({"evaluate_s": evaluated - started, "summary_s": summarized - evaluated,
                      "results": stats.results, "results_kept": stats.results_kept,
                      "evaluators_rejudged": stats.evaluators_rejudged}))


def timed(kind: str, mode: str, cmd: list[str], fixture: Path, env: dict, timeout_s: float, rep: int,
          n: int) -> bench.Measurement:
    log = bench.LOGS / f"incremental-{kind}-{mode}-{rep}.log"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, rss, max_rss, code = bench.measure(cmd, cwd=fixture, env=env, log=log, timeout_s=timeout_s)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = bench.Measurement(f"{kind}-{mode}", kind, " ".join(cmd), wall, rss, max_rss, code, code == 0, str(log),
                          bench.load(), "" if code == 0 else f"exit {code}")
    if code == 0 and kind in ("engine", "other"):
        m.extra = json.loads(log.read_text().strip().splitlines()[-1])
    # CPU seconds of the process and the processes it waited for (an older checkout's
    # judging workers, with --compare-src): unlike the wall time, barely moved by other work
    # on a shared machine. Informative only: the target is on wall time.
    m.extra["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = (f"  [{mode:<11}] {kind:<6} wall {wall:6.2f} s  cpu {m.extra['cpu_s']:6.2f} s  peak PSS {rss:5.0f} MB  "
            f"{'ok' if m.ok else 'FAILED ' + str(log)}")
    if "evaluate_s" in m.extra:
        e = m.extra
        line += (f"\n                       evaluate_traces {e['evaluate_s']:.2f} s ({e['results']:,} judged, "
                 f"{e['results_kept']:,} kept), write_summary {e['summary_s']:.2f} s")
    print(line, flush=True)
    return m


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Incremental re-evaluation: one of five evaluators changed.")
    parser.add_argument("--quick", action="store_true", help="10,000 traces instead of 100,000")
    parser.add_argument("--repeat", type=int, default=2, help="timed passes of each kind (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep the fixture (path printed)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--changed", choices=sorted(CONFIGS), default="fast_enough",
                        help="the evaluator whose config changes (default fast_enough: judged on trace "
                             "projections; answer_shape: on whole traces)")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="leave the environment's bytecode settings alone (with PYTHONDONTWRITEBYTECODE set, "
                             "every timed process compiles the project from source)")
    parser.add_argument("--compare-src", type=Path, metavar="DIR",
                        help="also time the engine process of the checkout in DIR (put first on PYTHONPATH), "
                             "interleaved with this one's repeat by repeat on the same fixture")
    parser.add_argument("--engine", nargs=3, metavar=("EVAL_YAML", "RUN_DIR", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.engine:
        engine_main(*args.engine)
        return 0
    global bench, reeval_bench
    import reeval_bench
    import measuring as bench

    ours = bench.Tool(bench.OURS, bench.find_our_evalh())
    python = ours.evalh.parent / "python"
    n_cases = 5_000 if args.quick else 50_000
    traces = 2 * n_cases
    print(f"ours: {ours.evalh} (commit {bench.git_commit()})\ncpus: {os.cpu_count()}, load average: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, bytecode cache: {'no' if args.no_bytecode_cache else 'yes'}"
          f"\n\n== {traces:,} traces x 5 evaluators", flush=True)
    root = Path(tempfile.mkdtemp(prefix="evalh-incremental-bench-"))
    bench.LOGS.mkdir(parents=True, exist_ok=True)
    measurements: list[bench.Measurement] = []
    try:
        fixture = bench.make_fixture(root / "fixture", n_cases, 0.0)
        reeval_bench.five_evaluators(fixture)
        eval_yaml = fixture / "eval.yaml"
        env = ours.env(fixture)
        if not args.no_bytecode_cache:
            env = bench.with_bytecode(env, python, root)
        run_dir = reeval_bench.produce(fixture, args.timeout)
        subprocess.run([str(ours.evalh), "re-evaluate", "--all", str(run_dir)], cwd=fixture, env=env,
                       capture_output=True, timeout=args.timeout, check=True)  # untimed first judging
        # The fixture's stub agent first; a PYTHONPATH of the caller's (another checkout) kept.
        engine_env = {**env, "PYTHONPATH": os.pathsep.join(
            p for p in (str(fixture), os.environ.get("PYTHONPATH", "")) if p)}
        engines = [("engine", engine_env)]
        if args.compare_src is not None:
            other_env = {**engine_env, "PYTHONPATH": os.pathsep.join((str(fixture), str(args.compare_src.resolve())))}
            if not args.no_bytecode_cache:
                other_env = bench.with_bytecode(other_env, python, root)
            engines.append(("other", other_env))
        engine = [str(python), str(Path(__file__).resolve()), "--engine", str(eval_yaml), str(run_dir)]
        for rep in range(args.repeat):
            measurements.append(timed("cli", "full", [str(ours.evalh), "re-evaluate", "--all", str(run_dir)],
                                      fixture, env, args.timeout, rep, traces))
            change_config(eval_yaml, args.changed)
            measurements.append(timed("cli", "incremental", [str(ours.evalh), "re-evaluate", str(run_dir)],
                                      fixture, env, args.timeout, rep, traces))
            # Nothing changed: what every re-evaluation pays whatever it judges (start, imports,
            # the summary over the store, gates, drift, exit).
            measurements.append(timed("cli", "unchanged", [str(ours.evalh), "re-evaluate", str(run_dir)],
                                      fixture, env, args.timeout, rep, traces))
            # The checkouts take turns going first, so neither always follows the other's writes.
            for kind, kind_env in engines if rep % 2 == 0 else engines[::-1]:
                measurements.append(timed(kind, "full", [*engine, "full"], fixture, kind_env, args.timeout, rep,
                                          traces))
                change_config(eval_yaml, args.changed)
                m = timed(kind, "incremental", [*engine, "incremental"], fixture, kind_env, args.timeout, rep, traces)
                measurements.append(m)
                if m.ok and (m.extra["evaluators_rejudged"] != [args.changed] or m.extra["results"] != traces):
                    print(f"  WARNING: expected {traces} results of {args.changed} re-judged, got {m.extra}",
                          flush=True)
    finally:
        if args.keep:
            print(f"\nfixture kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    def best(scenario: str) -> bench.Measurement | None:
        return min((m for m in measurements if m.scenario == scenario and m.ok), key=lambda m: m.wall_s, default=None)

    rows = []
    print("\n== summary (best of the repeats)\n")
    pairs = [("cli", "whole `evalh re-evaluate` process", lambda m: m.wall_s),
             ("engine", "engine process (imports, evaluate_traces, write_summary)", lambda m: m.wall_s),
             ("engine", "evaluate_traces alone", lambda m: m.extra["evaluate_s"])]
    informative = [("engine", "engine process, CPU time (user+sys, with its workers)", lambda m: m.extra["cpu_s"])]
    if args.compare_src is not None:
        pairs += [("other", f"{args.compare_src}: engine process", lambda m: m.wall_s),
                  ("other", f"{args.compare_src}: evaluate_traces alone", lambda m: m.extra["evaluate_s"])]
        informative += [("other", f"{args.compare_src}: engine process, CPU time", lambda m: m.extra["cpu_s"])]
    for kind in ("engine", "other"):
        full = [m for m in measurements if m.scenario == f"{kind}-full" and m.ok]
        incremental = [m for m in measurements if m.scenario == f"{kind}-incremental" and m.ok]
        if full and incremental and len(full) == len(incremental):
            # A repeat's own pair: the two passes ran back to back, under the same load.
            ratios = sorted(i.wall_s / f.wall_s for f, i in zip(full, incremental))
            label = "engine process" if kind == "engine" else f"{args.compare_src}: engine process"
            print(f"  {label + ', ratio of each repeat':<58} {' '.join(f'{r:.3f}' for r in ratios)}  "
                  f"(median {statistics.median(ratios):.3f})")
    for kind, label, figure in pairs:
        full, incremental = best(f"{kind}-full"), best(f"{kind}-incremental")
        if full is None or incremental is None:
            continue
        if figure(full) == 0:
            continue
        ratio = figure(incremental) / figure(full)
        ok = ratio <= TARGET_RATIO
        print(f"  {label:<58} full {figure(full):6.2f} s  incremental {figure(incremental):6.2f} s  "
              f"ratio {ratio:.3f}  (target <= {TARGET_RATIO}: {'yes' if ok else 'NO'})")
        rows.append({"check": f"incremental / full: {label}", "full_s": figure(full),
                     "incremental_s": figure(incremental), "value": ratio, "target": TARGET_RATIO, "ok": ok})
    floor = best("cli-unchanged")
    full, incremental = best("cli-full"), best("cli-incremental")
    if floor is not None and full is not None and incremental is not None and full.wall_s > floor.wall_s:
        beyond = (incremental.wall_s - floor.wall_s) / (full.wall_s - floor.wall_s)
        print(f"  {'`evalh re-evaluate` with nothing changed (the floor)':<58} {floor.wall_s:6.2f} s  "
              f"= {floor.wall_s / full.wall_s:.3f} of the full one")
        print(f"  {'beyond that floor: (incremental - floor) / (full - floor)':<58} {beyond:.3f}  (informative)")
        rows.append({"check": "unchanged / full: whole `evalh re-evaluate` process", "full_s": full.wall_s,
                     "incremental_s": floor.wall_s, "value": floor.wall_s / full.wall_s, "target": None, "ok": None})
        rows.append({"check": "(incremental - unchanged) / (full - unchanged): whole `evalh re-evaluate` process",
                     "full_s": full.wall_s, "incremental_s": incremental.wall_s, "value": beyond, "target": None,
                     "ok": None})
    for kind, label, figure in informative:
        runs = {mode: [figure(m) for m in measurements if m.scenario == f"{kind}-{mode}" and m.ok]
                for mode in ("full", "incremental")}
        if runs["full"] and runs["incremental"] and min(runs["full"]) > 0:
            full_s, incremental_s = min(runs["full"]), min(runs["incremental"])
            print(f"  {label:<58} full {full_s:6.2f} s  incremental {incremental_s:6.2f} s  "
                  f"ratio {incremental_s / full_s:.3f}  (informative)")
            rows.append({"check": f"incremental / full: {label}", "full_s": full_s, "incremental_s": incremental_s,
                         "value": incremental_s / full_s, "target": None, "ok": None})
    bench.OUT.mkdir(parents=True, exist_ok=True)
    path = bench.OUT / "incremental_results.json"
    path.write_text(json.dumps({
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": bench.git_commit(), "cpus": os.cpu_count(),
        "loadavg_at_end": os.getloadavg(), "quick": args.quick, "changed": args.changed,
        "bytecode_cache": not args.no_bytecode_cache, "repeat": args.repeat, "traces": traces,
        "measurements": [m.__dict__ for m in measurements], "checks": rows,
    }, indent=2, default=str) + "\n")
    print(f"\nJSON: {path}")
    return 0 if all(m.ok for m in measurements) else 1


if __name__ == "__main__":
    sys.exit(main())
