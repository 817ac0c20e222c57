"""The crash rule of the buffered traces appender (README, "Crash rule"), on a real `evalh
run`: a kill -9 loses at most the traces not yet flushed, and `--resume` runs exactly those
cells again, never one twice; a clean stop (Ctrl-C) loses none."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.evalh_process import EVALH, evalh_env, run_evalh

from tests.support.evals import write_eval
from tests.support.killed_run import kill_evalh_when

pytestmark = pytest.mark.integration

CASES = 5000  # x 2 variants: 10,000 cells
# Fixed seeds: the random kill points are the same on every run of the suite (a failure
# names its seed and replays). Each seed kills the run three times, then resumes it to the end.
SEEDS = (3301, 7919)
KILLS = 3
# Summary fields that differ between two runs of the same cells: ids, times, where it ran
# (the two evals differ in their folders, so in their config hashes).
_VARYING = ("run_id", "started_at", "finished_at", "config_path", "config_hash", "avg_latency_ms", "avg_latency_delta_ms")


def _eval(folder: Path) -> Path:
    path = write_eval(folder, cases=CASES)
    path.write_text(path.read_text().replace("max_concurrency: 4", "max_concurrency: 32"))
    return path


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _comparable(summary: Path) -> Any:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in _VARYING}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(yaml.safe_load(summary.read_text()))


def _traced_cells(traces: Path) -> list[tuple[str, str, int]]:
    raw = traces.read_bytes()
    assert raw.endswith(b"\n"), "a torn line was left in traces.jsonl"
    return [(t["case_id"], t["variant_name"], t.get("sample", 0)) for t in map(json.loads, raw.splitlines())]


@pytest.fixture(scope="module")
def whole_summary(tmp_path_factory) -> Path:
    """The summary of the same eval run once, never killed: what every seed's resumed run must equal."""
    folder = tmp_path_factory.mktemp("whole")
    reference = _eval(folder / "whole")
    done = run_evalh(["run", str(reference)], evalh_env(folder), folder, timeout=900)
    assert done.returncode == 0, done.stderr
    (whole,) = (folder / "whole" / "runs").iterdir()
    return whole / "summary.yaml"


@pytest.mark.parametrize("seed", SEEDS)
def test_kill_9_at_random_points_then_resume_runs_every_cell_exactly_once(tmp_path, env, seed, whole_summary):
    rng = random.Random(seed)
    cells = CASES * 2

    killed = _eval(tmp_path / "killed")
    runs = tmp_path / "killed" / "runs"

    def traces_file() -> Path | None:
        found = sorted(runs.glob("*/traces.jsonl")) if runs.exists() else []
        return found[0] if found else None

    # First kill: during the first launch's traces stage, at a random number of durable traces.
    first = rng.randrange(1, cells // 3)
    kill_evalh_when([*EVALH, "run", str(killed)], env, tmp_path, tmp_path / "kill0.log",
                    lambda: (t := traces_file()) is not None and _lines(t) >= first,
                    what=f"{first} traces (seed {seed})")
    traces = traces_file()
    assert traces is not None
    again: list[tuple[str, str]] = []
    resume = ["run", str(killed), "--resume", str(traces.parent)]
    for kill in range(1, KILLS + 1):
        if _lines(traces) >= cells:
            break  # killed after its last trace: what is left is judging, for the final resume
        durable, calls_before = _durable(traces), len(_calls(env))
        # Each resume killed at a random later point: in its traces stage, or (the last
        # kills) maybe once its traces are all in, while it judges or summarizes.
        at = rng.randrange(_lines(traces) + 1, min(cells, _lines(traces) + cells // 3) + 1)
        kill_evalh_when([*EVALH, *resume], env, tmp_path, tmp_path / f"kill{kill}.log", lambda at=at: _lines(traces) >= at,
                        what=f"{at} traces (kill {kill}, seed {seed})")
        again += [c for c in _calls(env)[calls_before:] if c[:2] in durable]

    durable, calls_before = _durable(traces), len(_calls(env))
    finished = run_evalh(resume, env, tmp_path, timeout=900)
    assert finished.returncode == 0, finished.stderr
    again += [c for c in _calls(env)[calls_before:] if c[:2] in durable]
    assert not again, f"cells called again after their trace was durable (seed {seed}): {again[:5]}"

    traced = _traced_cells(traces)
    assert len(traced) == len(set(traced)) == cells, f"seed {seed}"
    results = [json.loads(line) for line in (traces.parent / "results.jsonl").read_text().splitlines()]
    judged = [(r["case_id"], r["variant_name"], r.get("sample", 0), r["evaluator"]) for r in results]
    assert len(judged) == len(set(judged)) == cells * 2, f"seed {seed}"
    assert _comparable(traces.parent / "summary.yaml") == _comparable(whole_summary), f"seed {seed}"


def _durable(traces: Path) -> set[tuple[str, str]]:
    """The cells whose trace is in ``traces`` as a complete line (a torn tail is no trace)."""
    complete = traces.read_bytes().rsplit(b"\n", 1)[0] if traces.exists() else b""
    return {(t["case_id"], t["variant_name"]) for t in map(json.loads, complete.splitlines())}


def _calls(env: dict[str, str]) -> list[tuple[str, ...]]:
    """Every call of the stub system so far, in order (its call log)."""
    log = Path(env["EVALH_TEST_CALL_LOG"])
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()] if log.exists() else []


def test_ctrl_c_leaves_the_trace_of_every_cell_that_finished(tmp_path, env):
    # Cases from case_4 on wait for a gate that never opens; with 4 lanes, case_4..case_7
    # start only once case_0..case_3 have handed their traces to the appender.
    env["EVALH_TEST_GATE"] = str(tmp_path / "gate")
    path = write_eval(tmp_path / "toy", cases=40, systems="""
  - name: base
    adapter: python_function
    target: stub_agent:run
    hold_from: 4
""")
    calls = Path(env["EVALH_TEST_CALL_LOG"])
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while not (calls.exists() and calls.read_text().count("\n") >= 8):
        assert proc.poll() is None and time.monotonic() < deadline, "the run never reached the held cases"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr

    (traces,) = (tmp_path / "toy" / "runs").glob("*/traces.jsonl")
    assert sorted(c for c, _, _ in _traced_cells(traces)) == [f"case_{i}" for i in range(4)]
