"""command: real subprocesses in a throwaway copy of the artifact's after/ tree."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import time
from pathlib import Path

import fsspec
import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.base import EvaluatorContext
from evalh_pipeline.evaluators.command import Command
from evalh_pipeline.models import EvalCase
from tests.evaluators.fs_artifacts import a_trace, make_artifact

PY = sys.executable
CHECK = "import pathlib, sys; sys.exit(0 if pathlib.Path('src/fixed.txt').read_text() == 'yes\\n' else 1)"


def judge(config: dict, artifact, context: EvaluatorContext | None = None):
    evaluator = Command("tests_pass", "command", config, context or EvaluatorContext(env={"PATH": os.defpath}))
    return asyncio.run(evaluator.evaluate(EvalCase(id="c1"), a_trace(), artifact))


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def artifact(tmp_path):
    return make_artifact(tmp_path / "art", {"src/fixed.txt": "no\n"}, {"src/fixed.txt": "yes\n", "run.sh": "#!/bin/sh\nexit 3\n"},
                         modes={"run.sh": 0o100755})


def test_passes_when_the_command_exits_zero_in_the_after_tree(artifact):
    verdict = judge({"command": [PY, "-c", CHECK]}, artifact)
    assert verdict.passed, verdict.reason
    assert verdict.detail["exit_code"] == 0 and verdict.detail["timed_out"] is False
    assert verdict.detail["files_copied"] == 2


def test_fails_on_another_exit_code_with_the_last_stderr_line(artifact):
    verdict = judge({"command": [PY, "-c", "import sys; print('FAILED (failures=1)', file=sys.stderr); sys.exit(1)"]},
                    artifact)
    assert not verdict.passed
    assert verdict.reason == "ended with exit code 1, expected 0: FAILED (failures=1)"
    assert verdict.detail["stderr"].strip() == "FAILED (failures=1)"


def test_expected_exit_code_and_executable_modes_are_kept(artifact):
    assert judge({"command": ["./run.sh"], "expected_exit_code": 3}, artifact).passed


@pytest.mark.integration
def test_a_timeout_kills_the_process_group_and_fails(artifact, tmp_path):
    marker, pid_file, gate = tmp_path / "grandchild_alive", tmp_path / "grandchild.pid", tmp_path / "gate"
    # The child starts a grandchild in the same group that writes the marker once the test
    # opens the gate, after the judge has returned: only a grandchild that survived can.
    grandchild = (f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                  f"while not os.path.exists({str(gate)!r}): time.sleep(0.02)\n"
                  f"open({str(marker)!r}, 'w')")
    script = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {grandchild!r}]); time.sleep(60)"
    started = time.monotonic()
    verdict = judge({"command": [PY, "-c", script], "timeout_seconds": 0.5}, artifact)
    assert time.monotonic() - started < 10
    assert not verdict.passed and verdict.detail["timed_out"] is True
    assert "timed out after 0.5s" in verdict.reason
    gate.touch()
    if pid_file.exists():  # the grandchild got to start: it must be gone, and not by writing the marker
        pid = int(pid_file.read_text() or 0)
        deadline = time.monotonic() + 30  # a bound, never a pace: the kill was sent before the judge returned
        while pid and _running(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not (pid and _running(pid))
    assert not marker.exists()


def _running(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError, IndexError):
        return False


def test_a_missing_executable_is_an_error(artifact):
    evaluator = Command("tests_pass", "command", {"command": ["no-such-program-evalh"]}, EvaluatorContext(env={"PATH": os.defpath}))
    with pytest.raises(FileNotFoundError, match="'no-such-program-evalh' not found"):
        asyncio.run(evaluator.evaluate(EvalCase(id="c1"), a_trace(), artifact))


def test_an_eval_without_a_workspace_is_an_error():
    evaluator = Command("tests_pass", "command", {"command": [PY, "-c", "pass"]})
    with pytest.raises(ValueError, match="needs a workspace"):
        asyncio.run(evaluator.evaluate(EvalCase(id="c1"), a_trace(), None))


def test_the_host_environment_is_not_passed_unless_inherit_env(artifact):
    host = {"PATH": os.defpath, "HOST_ONLY": "leak"}
    show = [PY, "-c", "import os, sys; print(os.environ.get('HOST_ONLY', '-'), os.environ.get('GIVEN', '-')); "
                      "print(sys.executable)"]
    isolated = judge({"command": show, "env": {"GIVEN": "set"}}, artifact, EvaluatorContext(env=host))
    assert isolated.detail["stdout"].splitlines()[0] == "- set"
    inherited = judge({"command": show, "inherit_env": True}, artifact, EvaluatorContext(env=host))
    assert inherited.detail["stdout"].splitlines()[0] == "leak -"


def test_python_on_path_is_the_interpreter_running_evalh(artifact):
    verdict = judge({"command": ["python", "-c", "import sys; print(sys.prefix)"]}, artifact,
                    EvaluatorContext(env={"PATH": "/nonexistent"}))
    assert verdict.passed, verdict.reason
    assert verdict.detail["stdout"].strip() == sys.prefix


def test_output_is_capped_to_its_tail_and_secrets_are_masked(artifact):
    script = "import sys; sys.stdout.write('a' * 100000 + 'END hunter2'); sys.stderr.write('short')"
    verdict = judge({"command": [PY, "-c", script], "max_output_bytes": 100}, artifact,
                    EvaluatorContext(env={"PATH": os.defpath}, secret_values=frozenset({"hunter2"})))
    assert verdict.detail["stdout_bytes"] == 100011 and verdict.detail["stdout_truncated"] is True
    assert len(verdict.detail["stdout"]) < 110 and verdict.detail["stdout"].endswith("END ***MASKED***")
    assert verdict.detail["stderr"] == "short" and verdict.detail["stderr_truncated"] is False
    quiet = judge({"command": [PY, "-c", script], "capture_output": False}, artifact)
    assert "stdout" not in quiet.detail and quiet.detail["stdout_bytes"] == 100011


def test_the_temp_copy_is_removed_and_the_artifact_is_unchanged(artifact, tmp_path):
    folder = Path(artifact.artifacts_path)
    before = tree_digest(folder)
    script = ("import os, pathlib; print(os.getcwd()); pathlib.Path('src/fixed.txt').write_text('clobbered'); "
              "pathlib.Path('new.txt').write_text('x'); os.chmod('src', 0o500)")
    verdict = judge({"command": [PY, "-c", script]}, artifact)
    assert verdict.passed, verdict.reason
    workdir = Path(verdict.detail["stdout"].strip())
    assert workdir.name.startswith("evalh-command-") and not workdir.exists()
    assert tree_digest(folder) == before
    # Re-evaluation sees the artifact again, not the previous command's writes.
    assert judge({"command": [PY, "-c", CHECK]}, artifact).passed


@pytest.mark.integration
def test_the_temp_copy_is_removed_after_a_timeout(artifact, tmp_path):
    cwd_file = tmp_path / "cwd.txt"
    script = f"import os, time; open({str(cwd_file)!r}, 'w').write(os.getcwd()); time.sleep(60)"
    assert not judge({"command": [PY, "-c", script], "timeout_seconds": 1}, artifact).passed
    assert not Path(cwd_file.read_text()).exists()


def test_an_artifact_in_memory_storage_is_downloaded_with_its_modes(artifact):
    fs = fsspec.filesystem("memory")
    local = Path(artifact.artifacts_path)
    for path in local.rglob("*"):
        if path.is_file():
            fs.pipe_file(f"/cmdtest/art/{path.relative_to(local).as_posix()}", path.read_bytes())
    remote = artifact.model_copy(update={"artifacts_path": "memory://cmdtest/art"})
    try:
        assert judge({"command": [PY, "-c", CHECK]}, remote).passed
        assert judge({"command": ["./run.sh"], "expected_exit_code": 3}, remote).passed
    finally:
        fs.rm("/cmdtest", recursive=True)


@pytest.mark.parametrize("config, message", [
    ({"command": "pytest -x"}, "must be a list of arguments"),
    ({"command": []}, "at least 1 item"),
    ({"command": [PY], "timeout_seconds": 0}, "greater than 0"),
    ({"command": [PY], "shell": True}, "Extra inputs"),
])
def test_bad_config_is_refused_when_built(config, message):
    with pytest.raises(ValidationError, match=message):
        Command("x", "command", config)
