"""Where the repository and its shared files are, for tests that read or run them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The benchmark's fixture writer, which some tests reuse to build large evals.
BENCH_FIXTURE = REPO / "benchmarks" / "make_fixture.py"
