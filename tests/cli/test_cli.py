"""`evalh` as users run it: real processes, a real local Dagster instance."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path


from tests.support.evalh_process import EVALH, run_evalh


from tests.support.evals import write_eval


from tests.support.paths import REPO

def _cells(traces: Path):
    return [(t["case_id"], t["variant_name"]) for t in map(json.loads, traces.read_text().splitlines())]


def test_malformed_eval_exits_1_with_location_and_writes_nothing(tmp_path, env):
    path = write_eval(tmp_path / "toy")
    path.write_text(path.read_text().replace("adapter: python_function", "adapter: htp", 1))
    line = path.read_text().splitlines().index("    adapter: htp") + 1
    proc = run_evalh(["run", str(path)], env, tmp_path)
    assert proc.returncode == 1
    assert f"eval.yaml:{line} systems[0].adapter: unknown adapter 'htp' (known: " in proc.stderr
    assert "python_function" in proc.stderr
    assert not (tmp_path / "toy" / "runs").exists()


def test_bad_dataset_row_exits_1_and_writes_nothing(tmp_path, env):
    path = write_eval(tmp_path / "toy")
    with (tmp_path / "toy" / "cases.jsonl").open("a") as f:
        f.write('{"id": "case_0", "input": {}}\n')
    proc = run_evalh(["run", str(path)], env, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "cases.jsonl:7 id: duplicate case id 'case_0'" in proc.stderr
    runs = tmp_path / "toy" / "runs"
    assert not runs.exists() or not any(p for p in runs.iterdir() if not p.name.startswith("."))


def test_demo_eval_runs_and_reports_regressions(tmp_path, env):
    proc = run_evalh(["run", str(REPO / "evals" / "quickstart" / "eval.yaml")], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = (run_dir / "summary.yaml").read_text()
    assert "regressions:\n    - listing_fitzroy_1" in summary
    assert "run directory:" in proc.stdout


def test_killed_run_resumes_without_calling_completed_cells_again(tmp_path, env):
    # Cases from case_10 on wait for the gate: the kill lands while the run is going.
    env["EVALH_TEST_GATE"] = str(tmp_path / "gate")
    path = write_eval(tmp_path / "toy", cases=40, systems="""
  - name: base
    adapter: python_function
    target: stub_agent:run
    delay: 0.05
    hold_from: 10
  - name: candidate
    adapter: python_function
    target: stub_agent:run
    delay: 0.05
    hold_from: 10
""")
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = tmp_path / "toy" / "runs"
    deadline = time.monotonic() + 60
    traces = None
    while time.monotonic() < deadline:
        found = [p for p in runs.glob("*/traces.jsonl")] if runs.exists() else []
        if found and len(found[0].read_text().splitlines()) >= 12:
            traces = found[0]
            break
        time.sleep(0.02)
    assert traces is not None, "the run never produced traces"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = set(_cells(traces))
    assert 0 < len(before) < 80

    (tmp_path / "gate").touch()
    resumed = run_evalh(["run", str(path), "--resume", str(traces.parent)], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr

    cells = _cells(traces)
    assert len(cells) == len(set(cells)) == 80
    calls = [tuple(json.loads(line)) for line in Path(env["EVALH_TEST_CALL_LOG"]).read_text().splitlines()]
    for cell in before:
        assert calls.count(cell) == 1, f"{cell} was called again after it had a trace"
    assert (traces.parent / "summary.yaml").exists()


def test_reevaluate_command_rejudges_persisted_traces(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=4)
    assert run_evalh(["run", str(path)], env, tmp_path).returncode == 0
    (run_dir,) = (tmp_path / "toy" / "runs").iterdir()
    calls = Path(env["EVALH_TEST_CALL_LOG"]).read_text()
    path.write_text(path.read_text().replace("config: {tool_name: lookup}", "config: {tool_name: search}"))

    proc = run_evalh(["re-evaluate", str(run_dir)], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert Path(env["EVALH_TEST_CALL_LOG"]).read_text() == calls
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(results) == 4 * 2 * 2
    assert not any(r["passed"] for r in results if r["evaluator"] == "used_lookup")


def test_ctrl_c_exits_130_and_says_how_to_resume(tmp_path, env):
    # Cases from case_4 on wait for a gate that never opens: Ctrl-C lands while the run is going.
    env["EVALH_TEST_GATE"] = str(tmp_path / "gate")
    path = write_eval(tmp_path / "toy", cases=40, systems="""
  - name: base
    adapter: python_function
    target: stub_agent:run
    delay: 0.1
    hold_from: 4
""")
    # As from an interactive shell: SIGINT's default action, even if this test run ignores it.
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    runs = tmp_path / "toy" / "runs"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(runs.glob("*/traces.jsonl")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    (run_dir,) = [p for p in runs.iterdir() if not p.name.startswith(".")]
    assert f"--resume {run_dir}" in stderr.replace("\n", "")


def test_run_warns_when_an_evaluator_itself_failed(tmp_path, env):
    # `command` needs a workspace: without one every result is an evaluator error, not a verdict.
    evaluators = """
  - name: tests_pass
    type: command
    config: {command: [python, -c, "pass"]}
"""
    path = write_eval(tmp_path / "toy", cases=2, evaluators=evaluators)

    proc = run_evalh(["run", str(path)], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert "warning: 4 tests_pass result(s) errored" in " ".join(proc.stderr.split())
