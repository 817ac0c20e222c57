"""A ``docker_volume`` workspace keeps the cell's files in its container: a system that works
from outside it (an http service given the host path, a docker or git_branch service, a
user_simulator around one) would get an empty host folder and lose what it wrote there, so
the eval is refused at load, with one line, as a user meets it with ``evalh run --dry-run``.
"""

from __future__ import annotations

import textwrap

import pytest

from evalh_pipeline.config.errors import ConfigError
from evalh_pipeline.runner.loading import load_eval
from tests.support.evalh_process import run_evalh

HTTP = """\
    adapter: http
    endpoint: http://127.0.0.1:9/v1
    request_template: {folder: "{{ workspace.path }}", q: "{{ case.input.q }}"}
"""
SERVICE = """\
    adapter: docker
    image: local/agent:1
    inner_adapter: http
    inner_config: {endpoint: "http://localhost:{port}/chat"}
    healthcheck: GET /health
"""
SIMULATOR = """\
    adapter: user_simulator
    user_model: claude-4-7
    user_persona_prompt: You are a curious buyer.
    stopping_criterion: {type: content_match, patterns: [bye]}
    inner_system: {inner}
"""


def _eval(folder, system: str):
    folder.mkdir(exist_ok=True)
    (folder / "cases.jsonl").write_text('{"id": "one", "input": {"q": "hi", "user_message": "hi"}}\n')
    path = folder / "eval.yaml"
    path.write_text("eval: {name: sandboxed}\ndataset: {type: jsonl, path: cases.jsonl}\nsystems:\n  - name: s\n"
                    + system + textwrap.dedent("""\
        workspace:
          type: docker_volume
          image: busybox
        evaluators:
          - {name: any, type: contains_text, config: {all_of: [x]}}
    """))
    return path


@pytest.mark.integration
def test_an_http_system_with_a_docker_volume_workspace_is_refused_by_dry_run_in_one_line(tmp_path, env):
    path = _eval(tmp_path / "ev", HTTP)
    done = run_evalh(["run", "--dry-run", str(path)], env, path.parent)
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(line for line in done.stderr.splitlines() if "systems[0].adapter" in line)
    assert line == ("eval.yaml:5 systems[0].adapter: adapter 'http' works from outside the docker_volume "
                    "workspace's container: it would get an empty host folder and what it wrote there would "
                    "vanish; with workspace type docker_volume use a cli or python_function system, or use "
                    "workspace type tempdir_snapshot or git")
    assert not (path.parent / "runs").exists()


@pytest.mark.parametrize(("system", "adapter"), [
    (SERVICE, "docker"),
    (SIMULATOR.replace("{inner}", '{adapter: http, endpoint: "http://127.0.0.1:9/chat"}'), "user_simulator"),
])
def test_services_and_simulated_users_of_http_are_refused_with_docker_volume(tmp_path, system, adapter):
    with pytest.raises(ConfigError) as raised:
        load_eval(_eval(tmp_path / "ev", system))
    (line,) = str(raised.value).splitlines()
    assert f"systems[0].adapter: adapter '{adapter}' works from outside the docker_volume workspace's" in line


@pytest.mark.parametrize("system", [
    "    adapter: cli\n    command: [sh, -c, 'ls']\n",
    "    adapter: python_function\n    target: agent:run\n",
    SIMULATOR.replace("{inner}", "{adapter: cli, command: [sh]}"),
])
def test_systems_that_run_in_the_container_or_are_handed_it_load(tmp_path, system):
    path = _eval(tmp_path / "ev", system)
    (path.parent / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    assert load_eval(path).config.workspace.type == "docker_volume"
