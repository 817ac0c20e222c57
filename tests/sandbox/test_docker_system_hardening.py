"""The `docker` system's container is isolated as the docker_volume sandbox is, and a killed
run's container is removed at the next start.

The service is busybox's httpd with a CGI agent that reports, from inside the container, who
it runs as, its effective capabilities and whether it can write to `/`.
"""

from __future__ import annotations

import json
import socket
import subprocess
import textwrap

import pytest

from evalh_pipeline.common.containers import ContainerRuntime, RuntimeConfig
from evalh_pipeline.common.processes import process_start
from evalh_pipeline.systems.docker import OWNER_LABEL, sweep_dead_runs
from tests.support.evalh_process import EVALH, run_evalh
from tests.sandbox.engine import build_busybox_image
from tests.sandbox.support import records
from tests.support.killed_run import kill_evalh_when

pytestmark = pytest.mark.integration

# Case `slow` keeps its cell busy long enough to kill the run in the middle of it.
PROBE = b"""#!/bin/sh
body=$(head -c "${CONTENT_LENGTH:-0}")
case "$body" in *slow*) sleep 4;; esac
root=$( (echo x > /probe) 2>/dev/null && echo writable || echo refused)
tmp=$( (echo x > /tmp/probe) 2>/dev/null && echo writable || echo refused)
caps=$(grep CapEff /proc/self/status | tr -d 'CapEf:\\t ')
printf 'Content-Type: application/json\\r\\n\\r\\n'
printf '{"final_answer": "uid=%s caps=%s root=%s tmp=%s"}' "$(id -u)" "$caps" "$root" "$tmp"
"""


@pytest.fixture(scope="module")
def probe_image(docker_engine):
    build_busybox_image(docker_engine, "local/probe:1", {"www/health": b"ok\n", "www/cgi-bin/chat": PROBE},
                        changes=('CMD ["httpd", "-f", "-v", "-p", "8080", "-h", "/www"]',))
    return docker_engine


def _eval(folder, systems: str, cases: str = "[{id: one, input: {q: fast}}]"):
    folder.mkdir()
    (folder / "cases.yaml").write_text(f"cases: {cases}\n")
    (folder / "eval.yaml").write_text("eval: {name: hardened}\ndataset: {type: yaml, path: cases.yaml}\nsystems:\n"
                                      + textwrap.indent(textwrap.dedent(systems), "  ")
                                      + "evaluators:\n  - {name: answered, type: contains_text, config: {all_of: [uid]}}\n")
    return folder / "eval.yaml"


def _system(name: str, extra: str = "") -> str:
    return f"""
- name: {name}
  adapter: docker
  image: local/probe:1
  container_port: 8080
  inner_adapter: http
  inner_config:
    endpoint: "http://localhost:{{port}}/cgi-bin/chat"
    body: {{q: "{{{{ input.q }}}}"}}
  healthcheck: GET /health
  healthcheck_timeout_seconds: 120
{textwrap.indent(textwrap.dedent(extra), "  ")}"""


def _answers(run_dir) -> dict[tuple[str, str], str]:
    return {(t["variant_name"], t["case_id"]): (t["output"] or {}).get("final_answer") for t in
            records(run_dir, "traces.jsonl")}


def test_the_service_runs_read_only_without_capabilities_as_a_non_root_user_unless_relaxed(probe_image, tmp_path, env):
    relaxed = "user: null\nread_only: false\ncap_drop_all: false\n"
    path = _eval(tmp_path / "svc", _system("hardened") + _system("relaxed", relaxed))
    done = run_evalh(["run", str(path)], {**env, "DOCKER_HOST": probe_image.host}, path.parent, timeout=300)
    answers = _answers(sorted((path.parent / "runs").iterdir())[-1])
    assert answers[("hardened", "one")] == "uid=65534 caps=0000000000000000 root=refused tmp=writable", done.stderr[-3000:]
    uid, caps, root, _ = answers[("relaxed", "one")].split()
    assert (uid, root) == ("uid=0", "root=writable") and caps != "caps=0000000000000000"


def test_a_killed_runs_container_is_removed_at_the_next_start_and_resume_finishes_it(probe_image, tmp_path, env):
    path = _eval(tmp_path / "svc", _system("agent"), "[{id: one, input: {q: fast}}, {id: two, input: {q: slow}}]")
    run_env = {**env, "DOCKER_HOST": probe_image.host}

    def service_containers() -> list[str]:
        listed = probe_image.docker("ps", "-a", "--filter", "name=evalh-svc-", "--format", "{{.Names}}")
        return listed.stdout.decode().split()

    kill_evalh_when([*EVALH, "run", str(path)], run_env, path.parent, tmp_path / "killed.log",
                    lambda: len(service_containers()) == 1, what="service container")
    (leftover,) = service_containers()
    state = json.loads(probe_image.docker("inspect", leftover).stdout)[0]["State"]
    assert state["Running"], state  # the kill left it: nothing of the dead run stopped it
    run_dir = sorted((path.parent / "runs").iterdir())[-1]

    done = run_evalh(["run", str(path), "--resume", str(run_dir)], run_env, path.parent, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert leftover not in service_containers()
    traces = records(run_dir, "traces.jsonl")
    assert sorted((t["variant_name"], t["case_id"]) for t in traces) == [("agent", "one"), ("agent", "two")]
    assert all(t["error"] is None for t in traces), traces


def test_a_live_runs_container_is_never_swept(probe_image, env):
    """Another run, alive: its container stays however many runs start beside it."""
    runtime = ContainerRuntime(RuntimeConfig(docker_host=probe_image.host), env)
    other_run = subprocess.Popen(["sleep", "300"])
    marker = f"{socket.gethostname()}/{other_run.pid}/{process_start(other_run.pid)}"
    live = runtime.run("run", "-d", "--name", "evalh-svc-livetest", "--network", "none", "--label",
                       f"{OWNER_LABEL}={marker}", "local/probe:1").decode().strip()
    try:
        assert sweep_dead_runs(runtime) == []
        assert json.loads(probe_image.docker("inspect", live).stdout)[0]["State"]["Running"]
    finally:
        other_run.kill()
        other_run.wait()
        probe_image.docker("rm", "-f", live)
