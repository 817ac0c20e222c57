"""Sandbox keys are checked when the eval loads: one line per problem, with file, line and key."""

from __future__ import annotations

import textwrap

import pytest

from evalh_pipeline.common.containers import parse_size, show_size
from evalh_pipeline.config.errors import ConfigError
from evalh_pipeline.runner.loading import load_eval


def _load(tmp_path, body: str):
    (tmp_path / "cases.yaml").write_text("cases:\n  - {id: a, input: {q: x}}\n")
    (tmp_path / "fixture").mkdir()
    path = tmp_path / "eval.yaml"
    path.write_text("eval: {name: cfg}\ndataset: {type: yaml, path: cases.yaml}\n" + textwrap.dedent(body))
    return load_eval(path)


CLI = "systems:\n  - {name: a, adapter: cli, command: [sh, -c, 'true']}\n"


@pytest.mark.parametrize(("workspace", "message"), [
    ("copy_from: fixture", "eval.yaml:5 workspace.image: required key is missing"),
    ("image: x\n  memory: lots", "workspace.memory: not a size: 'lots'"),
    ("image: x\n  disk: 10k", "workspace.disk: must be at least 1m"),
    ("image: x\n  user: '0:0'", "workspace.user: user must be a non-root numeric uid:gid"),
    ("image: x\n  network: host", "workspace.network: input should be 'none' or 'bridge'"),
    ("image: x\n  pids: 2", "workspace.pids"),
    ("image: x\n  copy_from: ../elsewhere", "copy_from must not contain '..'"),
])
def test_bad_docker_volume_keys_are_load_errors(tmp_path, workspace, message):
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, CLI + f"workspace:\n  type: docker_volume\n  {workspace}\n")
    assert message in str(raised.value)


def test_eval_harness_docker_volume_keys_load(tmp_path):
    spec = _load(tmp_path, CLI + "workspace: {type: docker_volume, image: 'alpine:3.20', copy_from: fixture, "
                                 "volume_name: evalh-vol}\n")
    assert spec.config.workspace is not None and spec.config.workspace.type == "docker_volume"


SERVICE = """
systems:
  - name: s
    adapter: {adapter}
    {keys}
    inner_adapter: {inner}
    inner_config: {{endpoint: "http://localhost:{{port}}/chat"}}
    healthcheck: {health}
"""


@pytest.mark.parametrize(("adapter", "keys", "inner", "health", "message"), [
    ("docker", "image: local/x:1", "htttp", "GET /health", "inner_adapter: unknown adapter 'htttp'"),
    ("docker", "image: local/x:1", "docker", "GET /health", "would start a service inside a service"),
    ("docker", "image: local/x:1", "http", "FETCH /health", "healthcheck must be 'METHOD /path'"),
    ("docker", "image: local/x:1\n    volumes: [/only/host]", "http", "GET /h", "a volume is 'host:container'"),
    ("git_branch", "repo_path: r\n    branch: main\n    start_command: 'python app.py'", "http", "GET /h",
     "command must be a list of arguments"),
    ("git_branch", "repo_path: r\n    start_command: [x]", "http", "GET /h", "branch: required key is missing"),
])
def test_bad_service_system_keys_are_load_errors(tmp_path, adapter, keys, inner, health, message):
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, SERVICE.format(adapter=adapter, keys=keys, inner=inner, health=health))
    assert message in str(raised.value)


def test_sizes_read_as_docker_writes_them():
    assert parse_size("1g") == 1 << 30 and parse_size("512m") == 512 << 20 and parse_size("1.5GiB") == 3 << 29
    assert parse_size(4096) == 4096 and show_size(64 << 20) == "64 MiB"
    with pytest.raises(ValueError):
        parse_size("lots")


# eval-harness 2.0.2's docs/Adapters.md configurations, verbatim.
EVAL_HARNESS_DOCS = """
systems:
  - name: eval_refactor
    adapter: git_branch
    repo_path: ../my-agent
    branch: feat/eval-refactor
    start_command: ["uvicorn", "app:app", "--port", "0"]   # 0 = pick a port
    healthcheck: GET /health
    inner_adapter: http                     # what to do once it's up
    inner_config:
      endpoint: "http://localhost:{port}/chat"
  - name: agent_v3_docker
    adapter: docker
    image: registry/agent:v3
    inner_adapter: http
    inner_config:
      endpoint: "http://localhost:{port}/chat"
    healthcheck: GET /health
"""


def test_eval_harness_docs_service_configurations_load_unchanged(tmp_path):
    spec = _load(tmp_path, EVAL_HARNESS_DOCS)
    assert [(v.name, v.adapter) for v in spec.variants] == [("eval_refactor", "git_branch"),
                                                            ("agent_v3_docker", "docker")]
