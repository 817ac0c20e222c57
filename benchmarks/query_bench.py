#!/usr/bin/env python3
"""Read-only query benchmarks: `evalh compare`, `evalh drift` and the summary query.

    python benchmarks/query_bench.py               # everything (about a minute)
    python benchmarks/query_bench.py --repeat 9    # more timings per command (median reported)
    python benchmarks/query_bench.py --skip-peer   # do not run eval-harness

Scenarios:

  compare  `evalh compare A B` as a whole process, two runs of the 10,000-case x 2-variant
           fixture (benchmarks/make_fixture.py, LAT=0). Target <= 0.5 s.
  drift    `evalh drift B` against A, promoted with `evalh promote`. Target <= 0.5 s.
  summary  the summary query (queries/summary.py summarize_run, in-process) over a synthetic
           run of 1,000,000 results (125,000 cases x 2 variants x 4 evaluators), from scratch
           (reading the JSONL, writing the cell store) and again with the store fresh; with the
           process's peak memory (ru_maxrss). Target <= 3 s.

The two runs are made by `evalh run` itself (each with a fresh DAGSTER_HOME), not timed.
compare and drift are timed from just before the process starts until it exits; the
median of --repeat runs is reported, with the minimum. When /tmp/ehvenv/bin/evalh (or
$EVAL_HARNESS_EVALH) exists, eval-harness makes its own two runs of a copy of the fixture
and the same commands are timed, and the ratio ours / eval-harness is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE_SCRIPT = REPO / "benchmarks" / "make_fixture.py"
OURS = REPO / ".venv" / "bin" / "evalh"
PYTHON = REPO / ".venv" / "bin" / "python"
DEFAULT_PEER = Path("/tmp/ehvenv/bin/evalh")
CASES = 10_000
TARGETS = {"compare": 0.5, "drift": 0.5, "summary": 3.0, "summary (store fresh)": 3.0}
# eval-harness 2.0.2 on this machine, from the issue (for reference when it is not installed).
PEER_REFERENCE = {"compare": 1.6, "drift": 7.5}


def _env(home: Path | None, fixture: Path) -> dict[str, str]:
    # The fixture's stub agent, ahead of any PYTHONPATH given (another version's source to compare).
    path = os.pathsep.join(p for p in (str(fixture), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": "200"}
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        env["DAGSTER_HOME"] = str(home)
    return env


def _run(cmd: list[str], env: dict[str, str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    if check and proc.returncode not in (0, 1):
        sys.exit(f"error: {' '.join(cmd)} exited {proc.returncode}\n{proc.stderr[-2000:]}")
    return proc


def _timed(cmd: list[str], env: dict[str, str], cwd: Path, repeat: int) -> tuple[float, float]:
    """(median, min) wall seconds of ``cmd`` as a whole process."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, timeout=300)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            sys.exit(f"error: {' '.join(cmd)} exited {proc.returncode}\n{proc.stderr[-2000:]}")
    return statistics.median(times), min(times)


def _make_runs(tool: Path, fixture: Path, home: Path | None) -> tuple[Path, Path]:
    """Two runs of the fixture by ``tool``; the first promoted as the baseline."""
    env = _env(home, fixture)
    runs = fixture / "runs"
    made = []
    for _ in range(2):
        before = set(runs.iterdir()) if runs.exists() else set()
        _run([str(tool), "run", "eval.yaml"], env, fixture)
        (new,) = [p for p in runs.iterdir() if p not in before and p.is_dir() and p.name != "baselines"]
        made.append(new)
    _run([str(tool), "promote", str(made[0])], env, fixture)
    return made[0], made[1]


def _fixture(root: Path, name: str) -> Path:
    folder = root / name
    subprocess.run([sys.executable, str(FIXTURE_SCRIPT), str(folder), str(CASES), "0"], check=True)
    return folder


def _synthetic_run(folder: Path, cases: int, evaluators: int) -> Path:
    """A run directory with cases x 2 variants traces and x evaluators results, written directly."""
    run = folder / "2026-01-01T00-00-00-000000_synthetic"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": run.name, "eval_name": "synthetic",
                                              "variants": ["agent_a", "agent_b"]}))
    (run / "config.yaml").write_text("eval: {name: synthetic}\n")
    stamp = "2026-01-01T00:00:00+00:00"
    with (run / "traces.jsonl").open("w") as traces, (run / "results.jsonl").open("w") as results:
        for i in range(cases):
            for variant in ("agent_a", "agent_b"):
                traces.write(json.dumps({
                    "schema_version": "1.0", "run_id": run.name, "case_id": f"c{i:06d}", "variant_name": variant,
                    "sample": 0, "started_at": stamp, "finished_at": stamp, "latency_ms": 10.0 + i % 7,
                    "input": {"user_message": f"question {i}"}, "output": {"final_answer": f"answer {i}"},
                    "metrics": {"token_input": 100, "token_output": 20, "cost_usd": 0.0001}, "error": None,
                }) + "\n")
                for e in range(evaluators):
                    passed = not (variant == "agent_b" and e == 0 and i % 10 == 0)
                    results.write(json.dumps({
                        "schema_version": "1.0", "run_id": run.name, "case_id": f"c{i:06d}",
                        "variant_name": variant, "sample": 0, "evaluator": f"e{e}", "evaluator_type": "t",
                        "passed": passed, "score": 1.0 if passed else 0.0, "reason": "", "error": None,
                        "started_at": stamp, "finished_at": stamp, "latency_ms": 0.1,
                    }) + "\n")
    return run


def _summary_seconds(run: Path, repeat: int) -> dict[str, tuple[float, float, float]]:
    """The in-process summary of ``run``, each repeat from scratch (no cell store: it reads
    the JSONL and writes the store) then with the store fresh: (median s, min s, peak MB),
    the peak being the process's ru_maxrss (imports included)."""
    code = f"""
import resource, time
from pathlib import Path
from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.queries.summary import summarize_run
from evalh_pipeline.store.run_dir import RunDirectory
run = RunDirectory(Path({str(run)!r}))
start = time.perf_counter()
summary = summarize_run(run, variant_order=["agent_a", "agent_b"], pass_criteria=PassCriteria(),
                        baseline_variant="agent_a", config_path="eval.yaml", config_hash="h", cases_total=0)
print(time.perf_counter() - start, summary.comparison.regressions_count,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
    found: dict[str, list[tuple[float, float]]] = {"summary": [], "summary (store fresh)": []}
    for _ in range(repeat):
        shutil.rmtree(run / ".cells", ignore_errors=True)
        for name in found:
            # Run outside the checkout, so the evalh_pipeline imported is the one on the path
            # (PYTHONPATH can point at another version's source to compare).
            out = subprocess.run([str(PYTHON), "-c", code], capture_output=True, text=True, check=True, cwd=run)
            seconds, _, peak = out.stdout.split()[-3:]  # after any progress bar DuckDB printed
            found[name].append((float(seconds), float(peak)))
    return {name: (statistics.median(s for s, _ in runs), min(s for s, _ in runs), max(p for _, p in runs))
            for name, runs in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="timings per command (median reported)")
    parser.add_argument("--skip-peer", action="store_true", help="do not run eval-harness")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (path printed)")
    args = parser.parse_args()

    peer = Path(os.environ.get("EVAL_HARNESS_EVALH", DEFAULT_PEER))
    use_peer = not args.skip_peer and peer.exists()
    root = Path(tempfile.mkdtemp(prefix="evalh-query-bench-"))
    rows: list[tuple[str, float, float, float | None]] = []
    try:
        print(f"making two runs of {CASES} cases x 2 variants with evalh (not timed) ...", flush=True)
        ours_fixture = _fixture(root, "ours")
        a, b = _make_runs(OURS, ours_fixture, root / "dagster_home")
        env = _env(root / "dagster_home", ours_fixture)
        commands = {"compare": ["compare", str(a), str(b)], "drift": ["drift", str(b)]}
        timings = {name: _timed([str(OURS), *cmd], env, ours_fixture, args.repeat) for name, cmd in commands.items()}

        peer_timings: dict[str, float] = {}
        if use_peer:
            print("making two runs with eval-harness (not timed) ...", flush=True)
            peer_fixture = _fixture(root, "peer")
            pa, pb = _make_runs(peer, peer_fixture, None)
            peer_env = _env(None, peer_fixture)
            peer_commands = {"compare": ["compare", str(pa), str(pb)], "drift": ["drift", str(pb)]}
            peer_timings = {name: _timed([str(peer), *cmd], peer_env, peer_fixture, max(1, args.repeat // 2))[0]
                            for name, cmd in peer_commands.items()}

        print("writing a synthetic run of 1,000,000 results (not timed) ...", flush=True)
        synthetic = _synthetic_run(root / "synthetic", 125_000, 4)
        summaries = _summary_seconds(synthetic, max(1, args.repeat // 2))
        peaks = {name: peak for name, (_, _, peak) in summaries.items()}
        timings.update({name: (median, fastest) for name, (median, fastest, _) in summaries.items()})

        for name, (median, fastest) in timings.items():
            rows.append((name, median, fastest, peer_timings.get(name)))
        print()
        print(f"{'scenario':<21} {'median s':>9} {'min s':>7} {'target s':>9} {'ok':>3} {'peer s':>7} "
              f"{'ours/peer':>10} {'peak MB':>8}")
        for name, median, fastest, peer_s in rows:
            ok = "yes" if median <= TARGETS[name] else "NO"
            peer_text = f"{peer_s:7.2f}" if peer_s is not None else "      –"
            ratio = f"{median / peer_s:10.2f}" if peer_s else "         –"
            peak = f"{peaks[name]:8.0f}" if name in peaks else "       –"
            print(f"{name:<21} {median:9.3f} {fastest:7.3f} {TARGETS[name]:9.1f} {ok:>3} {peer_text} {ratio} {peak}")
        if not use_peer:
            print(f"\neval-harness not run (install: python3 -m venv /tmp/ehvenv && /tmp/ehvenv/bin/pip install "
                  f"eval-harness==2.0.2); its reference figures: {PEER_REFERENCE}")
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
