#!/usr/bin/env python3
"""Record eval-harness 2.0.2's verdicts on the compat evals (tests/compat/evals/*).

Each eval is copied to a temporary folder and run there with the real eval-harness
(`evalh run eval.yaml`, working directory and PYTHONPATH = that folder, as its docs run
examples from the folder that holds them). What it decided is written to
tests/compat/reference/<eval>.json: the exit code, every (case, variant, evaluator)
verdict ("pass", "fail" or "error"), each variant's passed-case count and the regressions
and improvements of its comparison against the baseline variant.
tests/compat/test_reference_verdicts.py runs the same evals through evalh and asserts it
decides the same.

Re-record (needs eval-harness 2.0.2 in its own venv; never install it into evalh's):

    python3 -m venv /tmp/ehvenv && /tmp/ehvenv/bin/pip install eval-harness==2.0.2
    python tests/compat/record_reference.py --evalh /tmp/ehvenv/bin/evalh [EVAL ...]

An eval folder may hold ``server.py``: it is started first (``python server.py PORT_FILE``,
an ephemeral loopback port) and its port is given to the eval as ``COMPAT_PORT``.
``COMPAT_PYTHON`` is the interpreter for cli evals (eval-harness gives a command no PATH).
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
EVALS = HERE / "evals"
REFERENCE = HERE / "reference"


@contextmanager
def eval_environment(folder: Path) -> Iterator[dict[str, str]]:
    """Environment variables for running the eval in ``folder``; starts its server.py if any."""
    env = {**os.environ, "PYTHONPATH": str(folder), "COMPAT_PYTHON": sys.executable}
    server = None
    if (folder / "server.py").exists():
        port_file = folder / ".port"
        server = subprocess.Popen([sys.executable, str(folder / "server.py"), str(port_file)])
        deadline = time.monotonic() + 10
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError(f"{folder / 'server.py'} did not start")
            time.sleep(0.05)
        env["COMPAT_PORT"] = port_file.read_text().strip()
    try:
        yield env
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)


def verdict_of(result: dict[str, Any]) -> str:
    """One result line as "pass", "fail" or "error" (an evaluator that could not judge)."""
    if result.get("error"):
        return "error"
    return "pass" if result.get("passed") else "fail"


def read_outcome(run_dir: Path | None, exit_code: int) -> dict[str, Any]:
    """What a run decided, in the shape of the reference files (from either tool's run folder)."""
    verdicts: dict[str, dict[str, dict[str, str]]] = {}
    passed: dict[str, int] = {}
    comparison: dict[str, dict[str, list[str]]] = {}
    if run_dir is not None and (run_dir / "results.jsonl").exists():
        for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            verdicts.setdefault(r["case_id"], {}).setdefault(r["variant_name"], {})[r["evaluator"]] = verdict_of(r)
    if run_dir is not None and (run_dir / "summary.yaml").exists():
        summary = yaml.safe_load((run_dir / "summary.yaml").read_text(encoding="utf-8"))
        passed = {v["name"]: v["cases_passed"] for v in summary.get("variants") or []}
        for delta in (summary.get("comparison") or {}).get("deltas") or []:
            comparison[delta["variant"]] = {"regressions": sorted(delta.get("regressions") or []),
                                            "improvements": sorted(delta.get("improvements") or [])}
    return {"exit_code": exit_code, "verdicts": verdicts, "cases_passed": passed, "comparison": comparison}


def record(eval_folder: Path, evalh: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="compat-") as tmp:
        folder = Path(tmp) / eval_folder.name
        shutil.copytree(eval_folder, folder, ignore=shutil.ignore_patterns("runs", "__pycache__"))
        with eval_environment(folder) as env:
            proc = subprocess.run([evalh, "run", "eval.yaml"], cwd=folder, env=env, capture_output=True, text=True,
                                  timeout=600)
        runs = sorted(p for p in (folder / "runs").glob("*") if p.is_dir() and p.name != "baselines") \
            if (folder / "runs").exists() else []
        outcome = read_outcome(runs[-1] if runs else None, proc.returncode)
        if proc.returncode != 0:
            outcome["stderr_tail"] = proc.stderr.strip().splitlines()[-1:] if proc.stderr.strip() else []
    version = subprocess.run([evalh, "--version"], capture_output=True, text=True).stdout.strip()
    return {"eval": eval_folder.name, "recorded_with": version or "eval-harness 2.0.2",
            "command": "python tests/compat/record_reference.py --evalh <eval-harness evalh>", **outcome}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evalh", default=os.environ.get("EVAL_HARNESS_EVALH"),
                        help="eval-harness's evalh executable (default: $EVAL_HARNESS_EVALH)")
    parser.add_argument("evals", nargs="*", help="eval folder names under tests/compat/evals (default: all)")
    args = parser.parse_args(argv)
    if not args.evalh:
        parser.error("give --evalh (eval-harness 2.0.2's evalh) or set EVAL_HARNESS_EVALH")
    names = args.evals or sorted(p.name for p in EVALS.iterdir() if (p / "eval.yaml").exists())
    REFERENCE.mkdir(exist_ok=True)
    for name in names:
        outcome = record(EVALS / name, args.evalh)
        (REFERENCE / f"{name}.json").write_text(json.dumps(outcome, indent=2, sort_keys=True) + "\n")
        print(f"{name}: exit {outcome['exit_code']}, "
              f"{sum(len(v) for c in outcome['verdicts'].values() for v in c.values())} verdicts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
