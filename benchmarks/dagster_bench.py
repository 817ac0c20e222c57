#!/usr/bin/env python3
"""Dagster's fixed cost (issue 23): `evalh run` and `evalh re-evaluate` of a one-case eval
against the Dagster floor, whole processes, ratios measured in one invocation.

    python benchmarks/dagster_bench.py [--repeat 9]      # also `./dev bench --only floor`
    python benchmarks/dagster_bench.py --compare-src DIR # A/B: also the code in DIR, same rounds

floor        benchmarks/dagster_floor.py: a fresh process that materializes a chain of five
             trivial assets on a new dynamic partition, in process, against an existing
             instance (evalh's dagster.yaml, storage created before the clock).
run          `evalh run eval.yaml` of a one-case eval (make_fixture.py N=1, LAT=0: one case x
             2 variants, 2 evaluators): a new partition, cases -> traces -> results -> summary
             -> drift and their checks, one Dagster run. Target <= 1.3 x floor.
re-evaluate  `evalh re-evaluate RUN_DIR` of that run: results, summary, drift of its
             partition. Target <= 1.3 x floor.

How the ratio is computed: one untimed round first (page cache, bytecode), then
``--repeat`` rounds, each running floor, run, re-evaluate back to back (the floor and the
`evalh` processes alternate: floor, run, re-evaluate, floor, run, ...). Each round gives
its own ratios, run / floor and re-evaluate / floor, of wall time and of CPU time (user +
sys of the process and the children it reaped, from os.wait4's rusage); the figure is the
median of the per-round ratios, and the spread is their min-max. A ratio taken within one
round compares processes a few seconds apart, so a slow drift of the host's load (other
work starting or ending over minutes) moves both sides of it alike and cancels; a ratio of
medians taken over the whole invocation does not cancel it. CPU time moves less than wall
time when other work shares the cores, so A/B decisions use the CPU ratios.

``--compare-src DIR`` (a `git archive` of older code: DIR/evalh_pipeline) also runs that
code's `evalh run` and `evalh re-evaluate` in every round (PYTHONPATH=DIR, its own fixture
and instance), new and old in turn (which goes first alternates by round), and reports the
median per-round ratios old / floor and new / old.
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
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measuring as bench  # noqa: E402 - the shared measuring helpers (re-execs under .venv if needed)

FLOOR_RATIO = 1.3
FLOOR_SCRIPT = Path(__file__).resolve().parent / "dagster_floor.py"
DEFAULT_REPEAT = 9


@dataclass
class _Side:
    """One copy of evalh under test: its label, environment and one-case fixture."""

    label: str
    env: dict[str, str]
    fixture: Path


def _side(root: Path, label: str, python: Path, src: Path | None) -> _Side:
    """A fixture with its own existing instance for one copy of the code (``src``: PYTHONPATH)."""
    fixture = bench.make_fixture(root / f"one-case-{label}", 1, 0.0)
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), *filter(None, [env.get("PYTHONPATH")])])
    env = bench.with_bytecode(env, python, fixture)
    return _Side(label, {**env, "DAGSTER_HOME": str(bench.fresh_dagster_home(fixture))}, fixture)


def _run_and_reeval(side: _Side, evalh: Path, timeout_s: float) -> dict[str, bench.Measurement]:
    """`evalh run` of the side's one-case eval, then `evalh re-evaluate` of the run it made."""
    runs = side.fixture / "runs"
    known = set(runs.glob("*")) if runs.is_dir() else set()
    run = bench.measure_process("floor", f"evalh-run-{side.label}", [str(evalh), "run", "eval.yaml"],
                                cwd=side.fixture, env=side.env, timeout_s=timeout_s, memory=False)
    run_dir = next((p for p in runs.glob("*") if p not in known and p.is_dir() and not p.name.startswith(".")), None)
    if run.ok and (run_dir is None or not (run_dir / "summary.yaml").exists()):
        run.ok, run.note = False, "no summary.yaml"
    reeval = bench.measure_process("floor", f"evalh-re-evaluate-{side.label}",
                                   [str(evalh), "re-evaluate", str(run_dir)], cwd=side.fixture, env=side.env,
                                   timeout_s=timeout_s, memory=False)
    return {f"run{side.label}": run, f"reeval{side.label}": reeval}


def _ratios(rounds: list[dict[str, bench.Measurement]], top: str, bottom: str) -> dict:
    """Per-round ratios top / bottom (wall and CPU): their median and min-max."""
    out: dict = {}
    for kind in ("wall", "cpu"):
        values = [getattr(row[top], f"{kind}_s") / getattr(row[bottom], f"{kind}_s") for row in rounds]
        out[kind] = {"median": statistics.median(values), "min": min(values), "max": max(values), "rounds": values}
    return out


def _ratio_text(ratio: dict) -> str:
    return "  ".join(f"{kind} {r['median']:.3f}x ({r['min']:.2f}-{r['max']:.2f})" for kind, r in ratio.items())


def floor_scenario(root: Path, repeat: int, timeout_s: float, compare_src: Path | None = None) -> dict:
    """Alternate the floor with the one-case run and its re-evaluation ``repeat`` times (and,
    with ``compare_src``, the older code's too); return the figures."""
    python = bench.our_python()
    evalh = bench.find_our_evalh()
    floor_dir = root / "floor"
    floor_dir.mkdir()
    floor_env = {**bench.with_bytecode(dict(os.environ), python, floor_dir),
                 "DAGSTER_HOME": str(bench.fresh_dagster_home(floor_dir))}
    sides = [_side(root, "", python, None)]
    if compare_src is not None:
        sides.append(_side(root, "_old", python, compare_src.resolve()))
    rounds = []
    print(f"\n== floor: Dagster floor vs `evalh run` / `evalh re-evaluate` of a one-case eval, "
          f"{repeat} rounds after one untimed{', old code: ' + str(compare_src) if compare_src else ''} "
          f"({bench.load_text()})", flush=True)
    for index in range(repeat + 1):
        timed = index > 0
        row = {"floor": bench.measure_process("floor", "dagster-floor",
                                              [str(python), str(FLOOR_SCRIPT), f"p{uuid.uuid4().hex}"],
                                              cwd=floor_dir, env=floor_env, timeout_s=timeout_s, memory=False)}
        for side in (sides if index % 2 else sides[::-1]):
            row.update(_run_and_reeval(side, evalh, timeout_s))
        status = "  ".join(f"{k} {m.wall_s:.2f} s (cpu {m.cpu_s:.2f})"
                           f"{'' if m.ok else ' FAILED: ' + m.note + ' (' + m.log + ')'}" for k, m in row.items())
        print(f"  {'round ' + str(index) if timed else 'untimed'}: {status}  ({bench.load_text()})", flush=True)
        if timed:
            rounds.append(row)
    ok = all(m.ok for row in rounds for m in row.values())
    keys = list(rounds[0]) if rounds else []
    figures: dict = {
        "ok": ok, "repeat": repeat, "compare_src": str(compare_src) if compare_src else None,
        "medians_s": {k: statistics.median(row[k].wall_s for row in rounds) for k in keys},
        "cpu_medians_s": {k: statistics.median(row[k].cpu_s for row in rounds) for k in keys},
        "rounds": [{k: {"wall_s": m.wall_s, "cpu_s": m.cpu_s, "ok": m.ok, "load": m.load} for k, m in row.items()}
                   for row in rounds],
        "load_first_last": [rounds[0]["floor"].load, rounds[-1]["floor"].load] if rounds else [],
    }
    if not ok or not rounds:
        print("  some process failed: no ratios", flush=True)
        return figures
    figures["run_over_floor"] = _ratios(rounds, "run", "floor")
    figures["reeval_over_floor"] = _ratios(rounds, "reeval", "floor")
    m, c = figures["medians_s"], figures["cpu_medians_s"]
    print(f"  medians: floor {m['floor']:.2f} s (cpu {c['floor']:.2f}), run {m['run']:.2f} s (cpu {c['run']:.2f}), "
          f"re-evaluate {m['reeval']:.2f} s (cpu {c['reeval']:.2f})\n"
          f"  run / floor, median of {repeat} per-round ratios (min-max):          "
          f"{_ratio_text(figures['run_over_floor'])}\n"
          f"  re-evaluate / floor, median of {repeat} per-round ratios (min-max):  "
          f"{_ratio_text(figures['reeval_over_floor'])}\n  target <= {FLOOR_RATIO}x", flush=True)
    if compare_src is not None:
        for key in ("run", "reeval"):
            figures[f"{key}_old_over_floor"] = _ratios(rounds, f"{key}_old", "floor")
            figures[f"{key}_new_over_old"] = _ratios(rounds, key, f"{key}_old")
        print(f"  old: run {m['run_old']:.2f} s (cpu {c['run_old']:.2f}), re-evaluate {m['reeval_old']:.2f} s "
              f"(cpu {c['reeval_old']:.2f})\n"
              f"  old run / floor:          {_ratio_text(figures['run_old_over_floor'])}\n"
              f"  old re-evaluate / floor:  {_ratio_text(figures['reeval_old_over_floor'])}\n"
              f"  new / old run:            {_ratio_text(figures['run_new_over_old'])}\n"
              f"  new / old re-evaluate:    {_ratio_text(figures['reeval_new_over_old'])}", flush=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT,
                        help=f"timed rounds (median of per-round ratios reported; {DEFAULT_REPEAT})")
    parser.add_argument("--compare-src", type=Path, metavar="DIR",
                        help="also time the code in DIR (DIR/evalh_pipeline, e.g. a `git archive` of main)")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    if args.compare_src is not None and not (args.compare_src / "evalh_pipeline").is_dir():
        parser.error(f"--compare-src {args.compare_src}: no evalh_pipeline/ folder in it")
    root = Path(tempfile.mkdtemp(prefix="evalh-dagster-bench-"))
    try:
        figures = floor_scenario(root, args.repeat, args.timeout, args.compare_src)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    bench.OUT.mkdir(parents=True, exist_ok=True)
    out = bench.OUT / "dagster_results.json"
    out.write_text(json.dumps({"commit": bench.git_commit(), **figures}, indent=2) + "\n")
    print(f"results: {out}")
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
