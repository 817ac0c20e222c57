"""`evalh run --dry-run` finds what a run would meet without calling any system: a
python_function target that does not import, an http endpoint the run cannot send to, a
cli program that is not there. One line each (file:line, key, system), exit 1."""

from __future__ import annotations

import os
import stat

import pytest

from tests.support.evalh_process import EVALH, run_evalh

from tests.support.evals import write_eval
from tests.support.pty_terminal import run_on_terminal


def _dry_run(path, env, cwd):
    return run_evalh(["run", str(path), "--dry-run"], env, cwd)


def _problem_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("eval.yaml:")]


def test_a_misspelt_target_module_fails_the_dry_run_naming_file_system_and_key(tmp_path, env):
    systems = """
  - name: base
    adapter: python_function
    target: stub_agent:run
  - name: candidate
    adapter: python_function
    target: stub_agnet:run
    isolation: process
"""
    path = write_eval(tmp_path / "toy", systems=systems)
    done = _dry_run(path, env, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "error: 1 problem a run would meet" in done.stderr
    (line,) = _problem_lines(done.stderr)
    assert line.startswith("eval.yaml:13 systems[1].target: system 'candidate' (python_function): "
                           "cannot import module 'stub_agnet'"), line
    assert "cells: 12" in done.stdout  # the plan is still printed
    assert not (tmp_path / "toy" / "runs").exists()


def test_a_target_is_imported_from_the_eval_folder_as_the_run_does(tmp_path, env):
    path = write_eval(tmp_path / "toy")
    done = _dry_run(path, env, tmp_path / "toy" / "..")  # stub_agent.py is in the eval's folder, not the cwd
    assert done.returncode == 0, done.stderr
    systems = "\n  - name: base\n    adapter: python_function\n    target: stub_agent:runn\n"
    broken = write_eval(tmp_path / "other", systems=systems)
    done = _dry_run(broken, env, tmp_path)
    assert done.returncode == 1
    (line,) = _problem_lines(done.stderr)
    assert line.endswith("systems[0].target: system 'base' (python_function): 'stub_agent' has no callable 'runn'")


@pytest.mark.parametrize(("endpoint", "problem"), [
    ("http://127.0.0.1:99999/agent", "Port out of range 0-65535"),
    ("http://127.0.0.1:80a/agent", "Invalid port"),
    ("https://api..example.com/v1", "host 'api..example.com' is not a host name"),
])
def test_an_http_endpoint_the_run_cannot_send_to_fails_the_dry_run(tmp_path, env, endpoint, problem):
    systems = f"""
  - name: base
    adapter: http
    endpoint: "{endpoint}"
"""
    path = write_eval(tmp_path / "toy", systems=systems)
    done = _dry_run(path, env, tmp_path)
    assert done.returncode == 1, done.stderr
    (line,) = _problem_lines(done.stderr)
    assert line.startswith("eval.yaml:10 systems[0].endpoint: system 'base' (http): "), line
    assert problem in line


def test_a_cli_program_that_is_not_there_fails_the_dry_run(tmp_path, env):
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "agent.sh").write_text("#!/bin/sh\necho Paris\n")  # not executable yet
    systems = """
  - name: base
    adapter: cli
    command: [no-such-program-evalh, "{{ case.input.answer }}"]
  - name: local
    adapter: cli
    command: [./agent.sh]
  - name: fine
    adapter: cli
    command: [sh, -c, "echo Paris"]
"""
    path = write_eval(folder, systems=systems)
    done = _dry_run(path, env, tmp_path)
    assert done.returncode == 1, done.stderr
    assert _problem_lines(done.stderr) == [
        "eval.yaml:10 systems[0].command: system 'base' (cli): program 'no-such-program-evalh' is not found on "
        f"the command's PATH ({env['PATH']})",
        f"eval.yaml:13 systems[1].command: system 'local' (cli): program './agent.sh' is not executable "
        f"({folder / 'agent.sh'}: chmod +x it)",
    ]
    os.chmod(folder / "agent.sh", os.stat(folder / "agent.sh").st_mode | stat.S_IXUSR)
    path.write_text(path.read_text().replace("no-such-program-evalh", "echo"))
    done = _dry_run(path, env, tmp_path)
    assert done.returncode == 0, done.stderr


def test_on_a_terminal_each_problem_is_one_whole_line(tmp_path, env):
    systems = "\n  - name: base\n    adapter: python_function\n    target: stub_agnet:run\n"
    path = write_eval(tmp_path / "toy", systems=systems)
    session = run_on_terminal([*EVALH, "run", str(path), "--dry-run"], env=env, cwd=tmp_path, columns=80)
    assert session.returncode == 1, session.text
    lines = session.text.splitlines()
    assert "error: 1 problem a run would meet" in lines
    assert ("eval.yaml:10 systems[0].target: system 'base' (python_function): cannot import module 'stub_agnet' "
            "for target 'stub_agnet:run': ModuleNotFoundError: No module named 'stub_agnet'") in lines, session.text
