"""A sandbox's life: python_function systems work through it, a timeout freezes it (what was
written before stays collected), retries get a fresh one, a killed run's are removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalh_pipeline.common.containers import ContainerRuntime, RuntimeConfig, Sandbox, SandboxSpec
from evalh_pipeline.workspaces.base import WorkspaceContext
from evalh_pipeline.workspaces.docker_volume import DockerVolumeWorkspace
from tests.sandbox.engine import IMAGE
from tests.sandbox.support import leftover_sandboxes, records, run_in, traces_by_variant, write_sandbox_eval

pytestmark = pytest.mark.integration

AGENT = '''
import subprocess

def run(case, variant):
    sandbox = variant["_workspace_sandbox"]
    done = subprocess.run([*sandbox["exec_prefix"], "sh", "-c", "echo python was here > src/app.txt; id -u"],
                          capture_output=True, text=True, check=True)
    return {"final_answer": f"{sandbox['workdir']} as {done.stdout.strip()}"}
'''


def test_a_python_function_changes_the_files_through_the_container(docker_engine, tmp_path, env):
    eval_path = write_sandbox_eval(tmp_path / "py", "- {name: py, adapter: python_function, target: agent:run}")
    (eval_path.parent / "agent.py").write_text(AGENT)
    done, run_dir = run_in(docker_engine, eval_path, env)
    trace = traces_by_variant(run_dir)["py"]
    assert trace["error"] is None and trace["output"]["final_answer"] == "/workspace as 65534", done.stderr[-2000:]
    after = run_dir / "artifacts" / "case_0" / "py" / "after" / "src" / "app.txt"
    assert after.read_text() == "python was here\n"


def test_the_timeout_freezes_the_sandbox_and_keeps_what_was_written_before(docker_engine, tmp_path, env):
    systems = """
    - name: slow
      adapter: cli
      command: [sh, -c, "echo started > early.txt; sleep 600"]
      timeout_seconds: 20
    - name: flaky
      adapter: cli
      command: [sh, -c, "if [ -e src/tried ]; then echo second; else touch src/tried; exit 1; fi"]
    """
    eval_path = write_sandbox_eval(tmp_path / "slow", systems,
                                   extra="retry: {max_attempts: 2, on: [adapter_error], backoff_seconds: 0}")
    done, run_dir = run_in(docker_engine, eval_path, env)
    traces = traces_by_variant(run_dir)
    assert traces["slow"]["error"]["type"] == "timeout", done.stderr[-2000:]
    assert traces["slow"]["latency_ms"] < 60_000
    assert (run_dir / "artifacts" / "case_0" / "slow" / "after" / "early.txt").read_text() == "started\n"
    # The retry got a fresh sandbox seeded anew: the first attempt's marker is gone.
    assert traces["flaky"]["error"] is not None and "exit code 1" in traces["flaky"]["error"]["message"]
    assert traces["flaky"]["metrics"]["custom"]["attempts"] == 2
    assert leftover_sandboxes(docker_engine) == []
    # Neither system answered (a timeout, an exit code): the run fails after its traces, the cause first.
    assert done.returncode == 2 and "no system answered" in done.stderr, done.stderr[-2000:]


def test_sandboxes_of_a_killed_run_are_removed_by_the_next_run(docker_engine, tmp_path):
    env = {"DOCKER_HOST": docker_engine.host, "PATH": "/usr/local/bin:/usr/bin:/bin"}
    eval_dir = tmp_path / "eval"
    (eval_dir / "fixture").mkdir(parents=True)
    context = WorkspaceContext(eval_dir=eval_dir, runs_root=str(tmp_path / "runs"), run_dir=tmp_path / "runs" / "r",
                               run_id="r", env=env)
    adapter = DockerVolumeWorkspace({"type": "docker_volume", "image": IMAGE, "copy_from": "fixture"}, context)
    gone = adapter.base_path / "evalh-ws-1-killed-run"  # a host folder the killed run's cleanup never reached
    runtime = ContainerRuntime(RuntimeConfig(), env)
    orphan = Sandbox.start(runtime, SandboxSpec(image=IMAGE), "orphan", {"evalh.workspace": str(gone)})
    try:
        assert leftover_sandboxes(docker_engine) != []
        adapter.recover_stale()
        assert leftover_sandboxes(docker_engine) == []
    finally:
        orphan.remove()
    assert not Path(gone).exists()


def test_a_sandbox_that_died_is_a_workspace_error_not_an_empty_after_state(docker_engine, tmp_path):
    from evalh_pipeline.models import EvalCase, RunVariant
    from evalh_pipeline.workspaces.base import WorkspaceError

    env = {"DOCKER_HOST": docker_engine.host, "PATH": "/usr/local/bin:/usr/bin:/bin"}
    eval_dir = tmp_path / "eval"
    (eval_dir / "fixture").mkdir(parents=True)
    (eval_dir / "fixture" / "kept.txt").write_text("kept\n")
    context = WorkspaceContext(eval_dir=eval_dir, runs_root=str(tmp_path / "runs"), run_dir=tmp_path / "runs" / "r",
                               run_id="r", env=env)
    adapter = DockerVolumeWorkspace({"type": "docker_volume", "image": IMAGE, "copy_from": "fixture"}, context)
    workspace = adapter.prepare(EvalCase(id="c", input={}), RunVariant(name="v", adapter="cli"))
    try:
        assert workspace.sandbox is not None
        docker_engine.docker("kill", workspace.sandbox.container)  # e.g. the OOM killer took its init
        with pytest.raises(WorkspaceError, match="stopped"):
            adapter.collect_artifacts(workspace)
    finally:
        adapter.cleanup(workspace)
    assert leftover_sandboxes(docker_engine) == []


def test_links_fifos_and_hard_links_come_out_as_they_are_and_lead_nowhere(docker_engine, tmp_path, env):
    command = ("ln -s /etc/passwd escape; ln -s ../README.md src/readme; mkfifo pipe; ln src/app.txt hard; "
               "mkdir -p deep/er; echo x > deep/er/f; chmod 700 deep; echo done")
    eval_path = write_sandbox_eval(tmp_path / "links", f"- {{name: links, adapter: cli, command: [sh, -c, {command!r}]}}")
    done, run_dir = run_in(docker_engine, eval_path, env)
    assert traces_by_variant(run_dir)["links"]["error"] is None, done.stderr[-2000:]
    after = run_dir / "artifacts" / "case_0" / "links" / "after"
    assert (after / "escape").is_symlink() and str((after / "escape").readlink()) == "/etc/passwd"
    assert str((after / "src" / "readme").readlink()) == "../README.md"
    assert (after / "pipe").is_fifo()
    assert (after / "hard").read_text() == "version 1\n" and (after / "deep" / "er" / "f").read_text() == "x\n"
    added = {r["variant_name"]: r for r in records(run_dir, "results.jsonl")}["links"]["detail"]["added"]
    assert set(added) >= {"escape", "src/readme", "pipe", "hard", "deep/er/f"}
