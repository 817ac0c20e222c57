"""The results stage fanned out over the run's shards (runner/evaluation.py ``judge_shard``,
the graph-backed ``results`` asset): real `evalh` processes, Dagster's multiprocess executor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval

pytestmark = pytest.mark.e2e

# What differs between two runs of the same eval in a result line (docs/guides/scale-out.md):
# the run, when and how long it was judged, and the hash of the trace judged (a trace records when and
# where it ran, extra.executor). The same traces judged in shards give the same bytes but the
# judging times (tests/runner/test_judging_shards.py).
PER_RUN_FIELDS = ("run_id", "started_at", "finished_at", "latency_ms", "trace_hash")


def _eval(folder: Path, run_yaml: str) -> Path:
    path = write_eval(folder, cases=13)
    path.write_text(path.read_text().replace("  baseline_variant: base\n", "  baseline_variant: base\n" + run_yaml))
    return path


def _run_dir(folder: Path) -> Path:
    (run_dir,) = [p for p in (folder / "runs").iterdir() if (p / "run.json").exists()]
    return run_dir


def _results(run_dir: Path) -> list[dict]:
    """The run's results without what differs per run, in trace order per evaluator: a sharded
    run's traces.jsonl is shard after shard, so its lines are sorted by cell to compare."""
    lines = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    kept = [{k: v for k, v in line.items() if k not in PER_RUN_FIELDS} for line in lines]
    return sorted(kept, key=lambda r: (r["evaluator"], r["case_id"], r["variant_name"], r["sample"]))


def _summary(run_dir: Path) -> dict:
    """What the summary concludes (the systems' latencies aside: measured, never equal)."""
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    for entry in [*summary["variants"], *summary["comparison"]["deltas"]]:
        for key in [k for k in entry if "latency" in k]:
            entry.pop(key)
    return {key: summary[key] for key in ("cases_total", "variants", "by_evaluator", "comparison", "completeness")}


def test_results_of_four_shards_in_processes_equal_one_process(tmp_path, env):
    sharded = _eval(tmp_path / "toy", "  executor: {type: multiprocess}\n  shards: 4\n")
    proc = run_evalh(["run", str(sharded)], env, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    four = _run_dir(tmp_path / "toy")
    assert not (four / "shards").exists()  # every part put in and removed

    # One process: the in-process executor, one shard (the processes' own path is the sharded run's).
    single = _eval(tmp_path / "single", "  executor: {type: in_process}\n  shards: 1\n")
    single.write_text(single.read_text().replace("name: single", "name: toy"))
    proc = run_evalh(["run", str(single)], env, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    one = _run_dir(tmp_path / "single")

    assert _results(four) == _results(one)
    assert len(_results(four)) == 13 * 2 * 2
    assert _summary(four) == _summary(one)
    assert _summary(four)["comparison"]  # the candidate regressed: there is something to compare

    # Re-evaluating re-judges from the persisted traces only: no system call, traces untouched.
    traces = (four / "traces.jsonl").read_bytes()
    calls = Path(env["EVALH_TEST_CALL_LOG"])
    calls.write_text("")
    proc = run_evalh(["re-evaluate", str(four), "--all"], env, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "re-judged 52 result(s)" in proc.stdout, proc.stdout
    assert calls.read_text() == ""
    assert (four / "traces.jsonl").read_bytes() == traces
    assert _results(four) == _results(one)
    assert not (four / "shards").exists()
