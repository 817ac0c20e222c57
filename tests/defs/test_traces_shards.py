"""The traces stage fanned out over shards inside one Dagster run (runner/shards.py, the
graph-backed ``traces`` asset): real `evalh` processes, Dagster's multiprocess executor."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
import yaml

from evalh_pipeline.runner.shards import usable_cores
from tests.support.deployment import verdicts
from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval
from tests.defs.reexecution_target import served_run_job

pytestmark = pytest.mark.e2e

SHARDED = """
  executor: {type: multiprocess}
  shards: 4
"""

# The stub agent, except that it kills its own process (the shard's step) at case_5 of the
# candidate while the file named by $EVALH_TEST_DIE exists: a worker lost mid-shard.
DYING_AGENT = '''
import os, signal

def run(case, variant):
    marker = os.environ.get("EVALH_TEST_DIE")
    if marker and os.path.exists(marker) and case["id"] == "case_5" and variant["name"] == "candidate":
        os.kill(os.getpid(), signal.SIGKILL)
    with open(os.environ["EVALH_TEST_CALL_LOG"], "a") as log:
        log.write(f"{case['id']} {variant['name']}\\n")
    answer = "wrong" if variant["name"] == "candidate" and int(case["id"].split("_")[1]) % 3 == 0 else "Paris"
    return {"final_answer": answer, "tool_calls": [{"name": "lookup", "arguments": {"q": case["id"]}}]}
'''

DYING_SYSTEMS = """
  - name: base
    adapter: python_function
    target: dying_agent:run
  - name: candidate
    adapter: python_function
    target: dying_agent:run
"""


def _sharded_eval(folder: Path, cases: int = 12, systems: str | None = None) -> Path:
    path = write_eval(folder, cases=cases, systems=systems)
    path.write_text(path.read_text().replace("  baseline_variant: base\n", "  baseline_variant: base\n" + SHARDED))
    return path


def _traces(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]


def _verdicts(run_dir: Path) -> dict:
    """What a summary concludes: pass counts, regressions and p-values per variant."""
    return verdicts(yaml.safe_load((run_dir / "summary.yaml").read_text()))


def _only_run(folder: Path) -> Path:
    (run_dir,) = [p for p in (folder / "runs").iterdir() if (p / "run.json").exists()]
    return run_dir


def test_sharded_run_uses_four_processes_and_sums_up_as_one_process(tmp_path, env):
    sharded = _sharded_eval(tmp_path / "toy")
    proc = run_evalh(["run", str(sharded)], env, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    run_dir = _only_run(tmp_path / "toy")
    assert json.loads((run_dir / "run.json").read_text())["shards"] == 4
    traces = _traces(run_dir)
    cells = [(t["case_id"], t["variant_name"], t["sample"]) for t in traces]
    assert len(cells) == len(set(cells)) == 12 * 2
    where = {t["extra"]["executor"]["shard"]: set() for t in traces}
    for trace in traces:
        where[trace["extra"]["executor"]["shard"]].add(trace["extra"]["executor"]["pid"])
    assert sorted(where) == ["1-of-4", "2-of-4", "3-of-4", "4-of-4"]
    pids = [pid for shard_pids in where.values() for pid in shard_pids]
    assert len(pids) == len(set(pids)) == 4, where  # each shard in a process of its own
    assert not (run_dir / "shards").exists()  # the parts are collected and removed
    # The plans and each shard's counts passed between the steps of the traces and results
    # graphs: JSON in the run's folder (defs/evals/step_values.py), nothing in the machine's
    # Dagster home.
    values = sorted((run_dir / ".step_values").rglob("*.json"))
    assert len(values) == 2 * (4 + 4) and all(isinstance(json.loads(v.read_text()), dict) for v in values)
    assert sum("results_shard" in str(v) for v in values) == 4
    assert not list((Path(env["DAGSTER_HOME"]) / "storage").rglob("result*"))

    single = write_eval(tmp_path / "single", cases=12)
    single.write_text(single.read_text().replace("name: single", "name: toy"))
    proc = run_evalh(["run", str(single)], env, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    alone = _only_run(tmp_path / "single")
    assert {t["extra"]["executor"]["shard"] for t in _traces(alone)} == {"1-of-1"}
    assert _verdicts(run_dir) == _verdicts(alone)
    assert _verdicts(run_dir)["deltas"]["candidate"][0]  # the candidate regressed: there is something to compare


def test_killed_shard_fails_the_run_and_resume_runs_only_its_missing_cells(tmp_path, env):
    folder = tmp_path / "toy"
    path = _sharded_eval(folder, systems=DYING_SYSTEMS)
    (folder / "dying_agent.py").write_text(DYING_AGENT)
    calls = tmp_path / "calls.log"
    env["EVALH_TEST_CALL_LOG"] = str(calls)
    env["EVALH_TEST_DIE"] = str(tmp_path / "die")
    (tmp_path / "die").write_text("")

    proc = run_evalh(["run", str(path)], env, tmp_path, timeout=600)
    assert proc.returncode != 0, proc.stdout
    run_dir = _only_run(folder)
    assert not (run_dir / "summary.yaml").exists()  # the lost shard never turned the run green
    before = calls.read_text().splitlines()
    assert len(before) == len(set(before)) < 24

    (tmp_path / "die").unlink()
    calls.write_text("")
    proc = run_evalh(["run", str(path), "--resume", str(run_dir)], env, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    again = calls.read_text().splitlines()
    # Only cells without a durable trace ran again: those of the killed shard (case_1, 5, 9).
    assert again and {line.split()[0] for line in again} <= {"case_1", "case_5", "case_9"}
    traces = _traces(run_dir)
    cells = [(t["case_id"], t["variant_name"]) for t in traces]
    assert len(cells) == len(set(cells)) == 24
    assert not any(t["error"] for t in traces)
    assert not (run_dir / "shards").exists()
    assert (run_dir / "summary.yaml").exists()


@pytest.mark.parametrize("value", ["0", "many"])
def test_bad_shard_count_is_one_line_before_any_cell(tmp_path, env, value):
    path = _sharded_eval(tmp_path / "toy")
    path.write_text(path.read_text().replace("  shards: 4\n", f"  shards: {value}\n"))
    proc = run_evalh(["run", str(path)], env, tmp_path)
    assert proc.returncode == 1
    assert "run.shards: shards must be a whole number of 1 or more, or auto" in proc.stderr, proc.stderr
    assert not (tmp_path / "toy" / "runs").exists()

    good = write_eval(tmp_path / "other")
    proc = run_evalh(["run", str(good), "--shards", value], env, tmp_path)
    assert proc.returncode == 1
    assert f"--shards {value}: shards must be a whole number of 1 or more, or auto" in proc.stderr, proc.stderr
    assert not (tmp_path / "other" / "runs").exists()


def test_reexecution_from_failure_runs_only_the_killed_shards_missing_cells(tmp_path, env, monkeypatch):
    folder = tmp_path / "toy"
    path = _sharded_eval(folder, systems=DYING_SYSTEMS)
    (folder / "dying_agent.py").write_text(DYING_AGENT)
    calls = tmp_path / "calls.log"
    env["EVALH_TEST_CALL_LOG"] = str(calls)
    env["EVALH_TEST_DIE"] = str(tmp_path / "die")
    (tmp_path / "die").write_text("")
    proc = run_evalh(["run", str(path)], env, tmp_path, timeout=600)
    assert proc.returncode != 0, proc.stdout
    run_dir = _only_run(folder)
    (tmp_path / "die").unlink()
    calls.write_text("")
    monkeypatch.setenv("EVALH_TEST_CALL_LOG", str(calls))  # the re-execution's steps are this process's children

    instance = dg.DagsterInstance.from_config(env["DAGSTER_HOME"])
    (parent,) = instance.get_runs()
    failed = {e.step_key for e in instance.all_logs(parent.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)}
    assert failed == {"toy__traces.toy__traces_shard[shard_2_of_4]"}
    # As the UI's "Re-execute from failure": the failed shard's step and what follows it.
    with dg.execute_job(served_run_job(path), instance, tags=parent.tags,
                        reexecution_options=dg.ReexecutionOptions.from_failure(parent.run_id, instance)) as result:
        assert result.success
        steps = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    traces_steps = {s for s in steps if s.startswith("toy__traces.")}
    assert traces_steps == {"toy__traces.toy__traces_shard[shard_2_of_4]", "toy__traces.toy__collect_traces"}, steps
    assert "toy__results.toy__results_shard[shard_4_of_4]" in steps  # judging follows, in its shards
    again = calls.read_text().splitlines()
    assert again and {line.split()[0] for line in again} <= {"case_1", "case_5", "case_9"}
    traces = _traces(run_dir)
    cells = [(t["case_id"], t["variant_name"]) for t in traces]
    assert len(cells) == len(set(cells)) == 24
    assert not any(t["error"] for t in traces)
    assert (run_dir / "summary.yaml").exists()


def test_shards_from_the_command_line_run_in_process_one_after_another(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=7)
    path.write_text(path.read_text().replace("  baseline_variant: base\n",
                                             "  baseline_variant: base\n  executor: {type: in_process}\n"))
    proc = run_evalh(["run", str(path), "--shards", "3"], env, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    run_dir = _only_run(tmp_path / "toy")
    assert json.loads((run_dir / "run.json").read_text())["shards"] == 3
    traces = _traces(run_dir)
    assert len({(t["case_id"], t["variant_name"]) for t in traces}) == len(traces) == 14
    assert {t["extra"]["executor"]["shard"] for t in traces} == {"1-of-3", "2-of-3", "3-of-3"}
    assert len({t["extra"]["executor"]["pid"] for t in traces}) == 1  # the in-process executor
    # The step values are in the run's folder in one process too, for a re-execution elsewhere.
    assert len(list((run_dir / ".step_values").rglob("*.json"))) == 2 * (3 + 3)
    assert "traces 2-of-3: done, 4 in" in proc.stderr, proc.stderr

    proc = run_evalh(["run", str(path), "--resume", str(run_dir), "--shards", "2"], env, tmp_path)
    assert proc.returncode == 1
    assert "a resumed run keeps the shards it started with" in proc.stderr


@pytest.mark.skipif(usable_cores() < 2, reason="auto spreads a run over processes only with more than one core")
def test_auto_spreads_a_run_above_its_cells_per_shard_over_processes(tmp_path, env):
    # Neither run.shards nor run.executor set: `auto`, with a small run.cells_per_shard so a
    # run of 24 cells is above it (the default is measured, benchmarks/README.md).
    path = write_eval(tmp_path / "toy", cases=12)
    path.write_text(path.read_text().replace("  baseline_variant: base\n",
                                             "  baseline_variant: base\n  cells_per_shard: 6\n"))
    proc = run_evalh(["run", str(path), "--dry-run"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "shards: 2 on executor multiprocess (shards and executor chosen: run.cells_per_shard 6)" in proc.stdout

    proc = run_evalh(["run", str(path)], env, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    run_dir = _only_run(tmp_path / "toy")
    assert json.loads((run_dir / "run.json").read_text())["shards"] == 2  # min(cores, 24 // 6) on 2 cores
    traces = _traces(run_dir)
    assert len({(t["case_id"], t["variant_name"]) for t in traces}) == len(traces) == 24
    where = {(t["extra"]["executor"]["shard"], t["extra"]["executor"]["pid"]) for t in traces}
    assert {shard for shard, _ in where} == {"1-of-2", "2-of-2"}
    assert len({pid for _, pid in where}) == 2, where  # each shard in a process of its own

    # Below it, the same eval stays one shard in the launching process.
    small = write_eval(tmp_path / "small", cases=2)
    small.write_text(small.read_text().replace("  baseline_variant: base\n",
                                               "  baseline_variant: base\n  cells_per_shard: 6\n"))
    proc = run_evalh(["run", str(small)], env, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    alone = _only_run(tmp_path / "small")
    assert json.loads((alone / "run.json").read_text())["shards"] == 1
    assert {t["extra"]["executor"]["shard"] for t in _traces(alone)} == {"1-of-1"}
