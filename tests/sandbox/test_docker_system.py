"""The `docker` system: a service container per variant, cells delegated to an inner http adapter.

The service image is busybox's httpd with a CGI "agent", built offline. The container has no
network: the http adapter reaches it through evalh's loopback relay.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.support.evalh_process import run_evalh
from tests.sandbox.engine import build_busybox_image
from tests.sandbox.support import records, traces_by_variant

pytestmark = pytest.mark.integration

CHAT = b"""#!/bin/sh
body=$(head -c "${CONTENT_LENGTH:-0}")
printf 'Content-Type: application/json\\r\\n\\r\\n'
printf '{"final_answer": "%s answered %s"}' "$AGENT_NAME" "$(echo "$body" | tr -d '"{}')"
"""


@pytest.fixture(scope="module")
def service_images(docker_engine):
    build_busybox_image(docker_engine, "local/agent:1", {"www/health": b"ok\n", "www/cgi-bin/chat": CHAT},
                        changes=('CMD ["httpd", "-f", "-v", "-p", "8080", "-h", "/www"]',))
    build_busybox_image(docker_engine, "local/broken:1",
                        changes=('CMD ["sh", "-c", "echo loading model; echo fatal: no weights found >&2; exit 3"]',))
    return docker_engine


def _eval(folder, systems: str):
    folder.mkdir()
    (folder / "cases.yaml").write_text("cases:\n  - {id: one, input: {q: hello}}\n  - {id: two, input: {q: bye}}\n")
    (folder / "eval.yaml").write_text(textwrap.dedent("""
        eval: {name: dockerized}
        dataset: {type: yaml, path: cases.yaml}
        systems:
        """) + textwrap.indent(textwrap.dedent(systems), "  ") + textwrap.dedent("""
        evaluators:
          - {name: answered, type: contains_text, config: {all_of: [answered]}}
        """))
    return folder / "eval.yaml"


# eval-harness's docs configuration (Adapters.md, "v1: docker"), with a local image and its port.
AGENTS = """
- name: agent_v3_docker
  adapter: docker
  image: local/agent:1
  container_port: 8080
  inner_adapter: http
  inner_config:
    endpoint: "http://localhost:{port}/cgi-bin/chat"
    body: {q: "{{ input.q }}"}
  healthcheck: GET /health
  env: {AGENT_NAME: v3}
"""


def test_cells_are_delegated_to_the_inner_adapter_and_the_container_is_removed(service_images, tmp_path, env):
    path = _eval(tmp_path / "svc", AGENTS)
    done = run_evalh(["run", str(path)], {**env, "DOCKER_HOST": service_images.host}, path.parent, timeout=300)
    run_dir = sorted((path.parent / "runs").iterdir())[-1]
    answers = {t["case_id"]: t["output"]["final_answer"] for t in records(run_dir, "traces.jsonl")}
    assert answers == {"one": "v3 answered q:hello", "two": "v3 answered q:bye"}, done.stderr[-3000:]
    assert all(r["passed"] for r in records(run_dir, "results.jsonl"))
    assert service_images.docker("ps", "-aq", "--filter", "label=evalh.sandbox").stdout.strip() == b""


def test_a_container_that_never_gets_healthy_fails_its_variant_with_its_last_log_lines(service_images, tmp_path, env):
    broken = """
- name: broken
  adapter: docker
  image: local/broken:1
  container_port: 8080
  inner_adapter: http
  inner_config: {endpoint: "http://localhost:{port}/cgi-bin/chat"}
  healthcheck: GET /health
  healthcheck_timeout_seconds: 120
- name: wrong_health
  adapter: docker
  image: local/agent:1
  container_port: 8080
  inner_adapter: http
  inner_config: {endpoint: "http://localhost:{port}/cgi-bin/chat"}
  healthcheck: GET /missing
  healthcheck_timeout_seconds: 8
"""
    path = _eval(tmp_path / "svc", AGENTS + broken)
    done = run_evalh(["run", str(path)], {**env, "DOCKER_HOST": service_images.host}, path.parent, timeout=300)
    run_dir = sorted((path.parent / "runs").iterdir())[-1]
    traces = records(run_dir, "traces.jsonl")
    assert len(traces) == 6, done.stderr[-3000:]  # the run completed: every cell has a trace
    by_variant = traces_by_variant(run_dir)
    assert by_variant["agent_v3_docker"]["error"] is None
    gone = by_variant["broken"]["error"]
    assert "exited with code 3" in gone["message"] and "fatal: no weights found" in gone["message"]
    unhealthy = by_variant["wrong_health"]["error"]["message"]
    assert "did not answer 2xx within 8s" in unhealthy and "HTTP 404" in unhealthy
    assert service_images.docker("ps", "-aq", "--filter", "label=evalh.sandbox").stdout.strip() == b""


def test_an_image_rebuilt_under_its_tag_reruns_only_its_variant_and_each_trace_names_the_image(
        service_images, tmp_path, env):
    import json

    build_busybox_image(service_images, "local/mutable:1", {"www/health": b"ok\n", "www/cgi-bin/chat": CHAT},
                        changes=('CMD ["httpd", "-f", "-v", "-p", "8080", "-h", "/www"]',))
    mutable = AGENTS.replace("agent_v3_docker", "agent_mutable").replace("local/agent:1", "local/mutable:1") \
        .replace("AGENT_NAME: v3", "AGENT_NAME: m1")
    path = _eval(tmp_path / "svc", AGENTS + mutable)
    docker_env = {**env, "DOCKER_HOST": service_images.host}
    runs = path.parent / "runs"

    def image_id(tag: str) -> str:
        return "image:" + service_images.docker("image", "inspect", "--format", "{{.Id}}", tag).stdout.decode().strip()

    run_evalh(["run", str(path)], docker_env, path.parent, timeout=300)
    first = sorted(runs.iterdir())[-1]
    before = {"agent_v3_docker": image_id("local/agent:1"), "agent_mutable": image_id("local/mutable:1")}
    assert json.loads((first / "run.json").read_text())["fixtures"]["systems"] == before
    assert {t["variant_name"]: t["extra"]["system_version"] for t in records(first, "traces.jsonl")} == before

    # The same tag, another image: a script that answers in other words.
    build_busybox_image(service_images, "local/mutable:1",
                        {"www/health": b"ok\n", "www/cgi-bin/chat": CHAT.replace(b"answered", b"rebuilt, answered")},
                        changes=('CMD ["httpd", "-f", "-v", "-p", "8080", "-h", "/www"]',))
    assert image_id("local/mutable:1") != before["agent_mutable"]
    done = run_evalh(["run", str(path), "--reuse", str(first)], docker_env, path.parent, timeout=300)
    second = sorted(runs.iterdir())[-1]
    assert f"reused 2 of 4 cell(s) from {first.name}" in done.stdout, done.stdout + done.stderr[-3000:]
    traces = {(t["variant_name"], t["case_id"]): t for t in records(second, "traces.jsonl")}
    assert {key: bool(t.get("reused_from")) for key, t in traces.items()} == {
        ("agent_v3_docker", "one"): True, ("agent_v3_docker", "two"): True,
        ("agent_mutable", "one"): False, ("agent_mutable", "two"): False}
    assert traces["agent_mutable", "one"]["output"]["final_answer"] == "m1 rebuilt, answered q:hello"
    assert traces["agent_mutable", "one"]["extra"]["system_version"] == image_id("local/mutable:1")
