"""Instructions per cell of the engine's run stages, counted by valgrind: a figure the load cannot move.

    python benchmarks/cell_instructions.py [--small 100] [--large 600] [--src DIR]

On this shared 2-core machine CPU seconds of one run move by +-25% with the other sessions'
load (hyperthreads and caches are shared), which hides any single per-cell saving. This
counts the instructions instead: the cases, traces and results (judging) stages
run in process, without Dagster, on make_fixture.py fixtures of ``--small`` and ``--large``
cases x 2 variants (LAT=0), each under ``valgrind --tool=callgrind``; the difference over
the difference in cells is the cost of one cell, start-up and imports cancelled out. Takes a
few minutes (valgrind runs Python ~50x slower). ``--src`` measures another checkout's
``evalh_pipeline`` (say a ``git archive`` of main) with this venv, for a before/after pair.
Needs valgrind (Debian: apt-get install valgrind).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"

# Runs in the measured process: the stages as the Dagster assets call them, minus Dagster.
STAGES = """
import asyncio, os, sys
from pathlib import Path
from evalh_pipeline.common.settings import Settings
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
spec = load_eval(sys.argv[1], settings=Settings.from_environment())
info = prepare_cases(spec, "cells")
stats = asyncio.run(produce_traces(spec, info.run_dir, spec.variant_names))
# As the assets hand it on (older code, measured with --src, has no digest to hand on).
handed = {"traces_digest": stats.traces_digest} if hasattr(stats, "traces_digest") else {}
asyncio.run(evaluate_traces(spec, info.run_dir, spec.variant_names, **handed))
"""


def instructions(fixture: Path, src: Path | None) -> int:
    """Instructions of one in-process run of the stages on ``fixture`` (valgrind's count)."""
    env = {**os.environ, "PYTHONPATH": str(src)} if src else dict(os.environ)
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(PYTHON), "-c", STAGES,
         str(fixture / "eval.yaml")],
        cwd=fixture, env=env, capture_output=True, text=True, check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        sys.exit(f"error: no instruction count from valgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=100, help="cases of the small fixture")
    parser.add_argument("--large", type=int, default=600, help="cases of the large fixture")
    parser.add_argument("--src", type=Path, help="a folder holding another evalh_pipeline to measure")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("error: valgrind not found (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="evalh-cells-") as tmp:
        counts = {}
        for n in (args.small, args.large):
            fixture = Path(tmp) / f"n{n}"
            subprocess.run([sys.executable, str(REPO / "benchmarks" / "make_fixture.py"), str(fixture), str(n), "0"],
                           check=True)
            counts[n] = instructions(fixture, args.src.resolve() if args.src else None)
            print(f"  {n:,} cases x 2: {counts[n]:,} instructions", flush=True)
    cells = 2 * (args.large - args.small)
    print(f"per cell: {(counts[args.large] - counts[args.small]) // cells:,} instructions "
          f"({'evalh_pipeline from ' + str(args.src) if args.src else 'this checkout'})")


if __name__ == "__main__":
    main()
