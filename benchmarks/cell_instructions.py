"""Instructions per cell of the engine's run stages, counted by valgrind: a figure the load cannot move.

    python benchmarks/cell_instructions.py [--small 100] [--large 600] [--src DIR] [--cells trivial,evaluators,http]

On this shared 2-core machine CPU seconds of one run move by +-25% with the other sessions'
load (hyperthreads and caches are shared), which hides any single per-cell saving. This
counts the instructions instead: the cases, traces and results (judging) stages
run in process, without Dagster, on make_fixture.py fixtures of ``--small`` and ``--large``
cases x 2 variants (LAT=0), each under ``valgrind --tool=callgrind``; the difference over
the difference in cells is the cost of one cell, start-up and imports cancelled out. Takes a
few minutes (valgrind runs Python ~50x slower). ``--src`` measures another checkout's
``evalh_pipeline`` (say a ``git archive`` of main) with this venv, for a before/after pair.
Needs valgrind (Debian: apt-get install valgrind).

The kinds of cell (``--cells``, all by default):

- ``trivial``: the make_fixture.py stub (an async ``python_function``, no latency) judged by
  its 2 evaluators;
- ``evaluators``: the same with a third deterministic evaluator (``regex_match``);
- ``http``: http_bench.py's fixture, ``adapter: http`` with ``provider: openai_chat`` and
  ``stream: true``, against benchmarks/sse_server.py (its own process, not counted) with
  ``--latency 0``, judged by the same 2 evaluators.
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
CELLS = ("trivial", "evaluators", "http")
THIRD_EVALUATOR = """  - name: names_the_listing
    type: regex_match
    config: {pattern: "Listing L[0-9]+ is in"}
"""

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
# As the assets hand them on (older code, measured with --src, may have neither to hand on).
handed = {name: getattr(stats, name) for name in ("traces_digest", "traces_sealed_after") if hasattr(stats, name)}
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


def write_fixture(kind: str, folder: Path, n: int, endpoint: str | None) -> None:
    """The fixture of ``n`` cases x 2 variants for the ``kind`` of cell (module docstring)."""
    if kind == "http":
        import http_bench

        http_bench.write_fixture(folder, n, 64, endpoint, http_bench.bench.OURS)
        return
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "make_fixture.py"), str(folder), str(n), "0"], check=True)
    if kind == "evaluators":
        config = folder / "eval.yaml"
        config.write_text(config.read_text().replace("run:\n", THIRD_EVALUATOR + "run:\n", 1))


def per_cell(kind: str, args: argparse.Namespace, tmp: Path, endpoint: str | None) -> int:
    """Instructions of one cell of ``kind``: the difference of the two fixtures' counts."""
    counts = {}
    for n in (args.small, args.large):
        fixture = tmp / f"{kind}{n}"
        write_fixture(kind, fixture, n, endpoint)
        counts[n] = instructions(fixture, args.src.resolve() if args.src else None)
        print(f"  {kind}: {n:,} cases x 2: {counts[n]:,} instructions", flush=True)
    return (counts[args.large] - counts[args.small]) // (2 * (args.large - args.small))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=100, help="cases of the small fixture")
    parser.add_argument("--large", type=int, default=600, help="cases of the large fixture")
    parser.add_argument("--src", type=Path, help="a folder holding another evalh_pipeline to measure")
    parser.add_argument("--cells", default=",".join(CELLS),
                        help=f"the kinds of cell to count, comma-separated (default: {','.join(CELLS)})")
    args = parser.parse_args()
    kinds = [k for k in args.cells.split(",") if k]
    if unknown := [k for k in kinds if k not in CELLS]:
        sys.exit(f"error: --cells: unknown kind(s) {', '.join(unknown)} (known: {', '.join(CELLS)})")
    if shutil.which("valgrind") is None:
        sys.exit("error: valgrind not found (Debian: apt-get install valgrind)")
    sys.path.insert(0, str(REPO / "benchmarks"))
    server = None
    if "http" in kinds:
        import http_bench

        server = http_bench.Server("--latency", "0")
    try:
        with tempfile.TemporaryDirectory(prefix="evalh-cells-") as tmp:
            found = {kind: per_cell(kind, args, Path(tmp), server.endpoint if server else None) for kind in kinds}
    finally:
        if server is not None:
            server.close()
    code = "evalh_pipeline from " + str(args.src) if args.src else "this checkout"
    for kind, count in found.items():
        print(f"per {kind} cell: {count:,} instructions ({code})")


if __name__ == "__main__":
    main()
