"""The `git_branch` system: a clone of a branch, its service started, cells delegated.

A local git repository with one branch per version of a tiny HTTP agent (Python's
http.server); eval-harness's docs configuration (Adapters.md, "v1: git_branch") with
`{port}` in the start command.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from evalh_pipeline.common.processes import process_start
from evalh_pipeline.systems.git_branch import sweep_dead_runs
from tests.support.evalh_process import EVALH, run_evalh
from tests.sandbox.support import records, traces_by_variant
from tests.support.killed_run import kill_evalh_when

pytestmark = pytest.mark.integration

SERVER = '''
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

ANSWER = {answer!r}

class Agent(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps({{"final_answer": ANSWER + " " + body["q"]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

print("agent up", flush=True)
HTTPServer(("127.0.0.1", int(sys.argv[1])), Agent).serve_forever()
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture
def agent_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "my-agent"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text(SERVER.format(answer="main says"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "v1")
    git(repo, "checkout", "-qb", "feat/eval-refactor")
    (repo / "app.py").write_text(SERVER.format(answer="refactor says"))
    git(repo, "commit", "-qam", "v2")
    git(repo, "checkout", "-qb", "broken")
    (repo / "app.py").write_text("import sys\nprint('booting', flush=True)\nsys.exit('config missing: API_URL')\n")
    git(repo, "commit", "-qam", "broken")
    git(repo, "checkout", "-q", "main")
    return repo


def _eval(folder: Path, systems: str) -> Path:
    folder.mkdir()
    (folder / "cases.yaml").write_text("cases:\n  - {id: one, input: {q: hello}}\n  - {id: two, input: {q: bye}}\n")
    (folder / "eval.yaml").write_text("eval: {name: branches}\ndataset: {type: yaml, path: cases.yaml}\nsystems:\n"
                                      + textwrap.indent(textwrap.dedent(systems), "  ")
                                      + "evaluators:\n  - {name: says, type: contains_text, config: {all_of: [says]}}\n")
    return folder / "eval.yaml"


def _system(name: str, branch: str, timeout: int = 60) -> str:
    return f"""
- name: {name}
  adapter: git_branch
  repo_path: ../my-agent
  branch: {branch}
  start_command: ["{sys.executable}", "app.py", "{{port}}"]
  healthcheck: GET /health
  healthcheck_timeout_seconds: {timeout}
  inner_adapter: http
  inner_config:
    endpoint: "http://localhost:{{port}}/chat"
    body: {{q: "{{{{ input.q }}}}"}}
"""


def _servers(repo: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if any("evalh-git-branch-" in part for part in proc.info["cmdline"] or []):
            found.append(proc)
    return found


def test_each_branch_serves_its_cells_and_its_worktree_and_process_are_removed(agent_repo, tmp_path, env):
    path = _eval(tmp_path / "evals", _system("main", "main") + _system("eval_refactor", "feat/eval-refactor"))
    done = run_evalh(["run", str(path)], env, path.parent, timeout=300)
    run_dir = sorted((path.parent / "runs").iterdir())[-1]
    answers = {(t["variant_name"], t["case_id"]): t["output"]["final_answer"] for t in records(run_dir, "traces.jsonl")}
    assert answers == {("main", "one"): "main says hello", ("main", "two"): "main says bye",
                       ("eval_refactor", "one"): "refactor says hello",
                       ("eval_refactor", "two"): "refactor says bye"}, done.stderr[-3000:]
    assert git(agent_repo, "worktree", "list").count("\n") == 1  # only the repository's own
    assert git(agent_repo, "status", "--porcelain") == "" and git(agent_repo, "branch", "--show-current") == "main\n"
    assert not (agent_repo / ".git" / "worktrees").exists()  # nothing was written into the user's repository
    assert _servers(agent_repo) == []


def test_a_branch_whose_service_exits_fails_its_cells_with_its_output_and_the_run_completes(agent_repo, tmp_path, env):
    path = _eval(tmp_path / "evals", _system("main", "main") + _system("broken", "broken"))
    done = run_evalh(["run", str(path)], env, path.parent, timeout=300)
    run_dir = sorted((path.parent / "runs").iterdir())[-1]
    traces = traces_by_variant(run_dir)
    assert len(records(run_dir, "traces.jsonl")) == 4, done.stderr[-3000:]
    assert traces["main"]["error"] is None
    message = traces["broken"]["error"]["message"]
    assert "start_command exited with code 1" in message and "config missing: API_URL" in message
    assert git(agent_repo, "worktree", "list").count("\n") == 1


def test_an_unknown_branch_or_inner_adapter_is_reported(agent_repo, tmp_path, env):
    path = _eval(tmp_path / "evals", _system("nope", "no-such-branch"))
    done = run_evalh(["run", str(path)], env, path.parent, timeout=300)
    run_dir = sorted((path.parent / "runs").iterdir())[-1]
    message = traces_by_variant(run_dir)["nope"]["error"]["message"]
    assert "branch 'no-such-branch' not found" in message and "feat/eval-refactor" in message, done.stderr
    bad = _eval(tmp_path / "bad", _system("x", "main").replace("inner_adapter: http", "inner_adapter: htttp"))
    done = run_evalh(["run", str(bad)], env, bad.parent, timeout=120)
    assert done.returncode != 0 and "inner_adapter" in done.stderr and "htttp" in done.stderr


def _services_under(folder: Path) -> list[psutil.Process]:
    """The branch services running in a worktree under ``folder`` (their cwd). The service's
    own command line only: evalh's git calls (clone, checkout) also run there, briefly."""
    found = []
    for proc in psutil.process_iter(["cwd", "cmdline"]):
        if (proc.info["cwd"] or "").startswith(str(folder) + "/") and "app.py" in (proc.info["cmdline"] or []):
            found.append(proc)
    return found


def test_a_killed_runs_service_and_worktree_are_removed_at_the_next_start_and_resume_finishes_it(
        agent_repo, tmp_path, env):
    # Case `two` keeps its cell busy long enough to kill the run in the middle of it.
    git(agent_repo, "checkout", "-qb", "slow")
    (agent_repo / "app.py").write_text(SERVER.format(answer="slow says").replace(
        "    def do_POST(self):\n", "    def do_POST(self):\n        __import__('time').sleep(4)\n"))
    git(agent_repo, "commit", "-qam", "slow")
    git(agent_repo, "checkout", "-q", "main")
    path = _eval(tmp_path / "evals", _system("slow", "slow"))
    temp = tmp_path / "tmp"  # where the run's worktree folders go
    temp.mkdir()
    run_env = {**env, "TMPDIR": str(temp)}

    kill_evalh_when([*EVALH, "run", str(path)], run_env, path.parent, tmp_path / "killed.log",
                    lambda: bool(_services_under(temp)), what="branch service")
    (leftover,) = _services_under(temp)
    assert leftover.is_running() and len(list(temp.glob("evalh-git-branch-*"))) == 1  # what the kill left
    run_dir = sorted((path.parent / "runs").iterdir())[-1]

    done = run_evalh(["run", str(path), "--resume", str(run_dir)], run_env, path.parent, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not leftover.is_running()
    assert list(temp.glob("evalh-git-branch-*")) == [] and _services_under(temp) == []
    assert git(agent_repo, "worktree", "list").count("\n") == 1  # only the repository's own
    answers = sorted((t["case_id"], t["output"]["final_answer"]) for t in records(run_dir, "traces.jsonl"))
    assert answers == [("one", "slow says hello"), ("two", "slow says bye")]


def test_a_live_runs_service_and_worktree_are_never_swept(agent_repo, tmp_path):
    folder = tmp_path / "evalh-git-branch-live"
    (folder / "wt").mkdir(parents=True)
    other_run = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        owner = f"{socket.gethostname()}/{other_run.pid}/{process_start(other_run.pid)}"
        (folder / "owner.json").write_text(json.dumps({"owner": owner, "repo": str(agent_repo),
                                                       "pgid": other_run.pid}))
        assert sweep_dead_runs(tmp_path) == []
        assert other_run.poll() is None and (folder / "wt").is_dir()
    finally:
        other_run.kill()
        other_run.wait()


def test_reuse_keeps_traces_of_an_unmoved_branch_and_reruns_a_moved_one(agent_repo, tmp_path, env):
    import json

    path = _eval(tmp_path / "evals", _system("main", "main"))
    runs = path.parent / "runs"
    run_evalh(["run", str(path)], env, path.parent, timeout=300)
    first = sorted(runs.iterdir())[-1]
    old = git(agent_repo, "rev-parse", "main").strip()
    assert json.loads((first / "run.json").read_text())["fixtures"]["systems"] == {"main": f"git:{old}"}

    done = run_evalh(["run", str(path), "--reuse", str(first)], env, path.parent, timeout=300)
    assert f"reused 2 of 2 cell(s) from {first.name}" in done.stdout, done.stdout + done.stderr[-3000:]

    (agent_repo / "app.py").write_text(SERVER.format(answer="moved says"))
    git(agent_repo, "commit", "-qam", "v1.1")
    new = git(agent_repo, "rev-parse", "main").strip()
    done = run_evalh(["run", str(path), "--reuse", str(first)], env, path.parent, timeout=300)
    moved = sorted(runs.iterdir())[-1]
    assert "reused 2 of 2" not in done.stdout, done.stdout
    assert json.loads((moved / "run.json").read_text())["fixtures"]["systems"] == {"main": f"git:{new}"}
    traces = records(moved, "traces.jsonl")
    assert sorted(t["output"]["final_answer"] for t in traces) == ["moved says bye", "moved says hello"]
    assert all(not t.get("reused_from") for t in traces)


def test_a_moved_branch_reruns_only_its_own_variant_and_each_trace_names_its_commit(agent_repo, tmp_path, env):
    path = _eval(tmp_path / "evals", _system("main", "main") + _system("eval_refactor", "feat/eval-refactor"))
    runs = path.parent / "runs"
    run_evalh(["run", str(path)], env, path.parent, timeout=300)
    first = sorted(runs.iterdir())[-1]
    feature = git(agent_repo, "rev-parse", "feat/eval-refactor").strip()
    old = git(agent_repo, "rev-parse", "main").strip()
    assert {t["variant_name"]: t["extra"]["system_version"] for t in records(first, "traces.jsonl")} == {
        "main": f"git:{old}", "eval_refactor": f"git:{feature}"}

    (agent_repo / "app.py").write_text(SERVER.format(answer="moved says"))
    git(agent_repo, "commit", "-qam", "v1.1")
    new = git(agent_repo, "rev-parse", "main").strip()
    done = run_evalh(["run", str(path), "--reuse", str(first)], env, path.parent, timeout=300)
    moved = sorted(runs.iterdir())[-1]
    assert f"reused 2 of 4 cell(s) from {first.name}" in done.stdout, done.stdout + done.stderr[-3000:]
    traces = {(t["variant_name"], t["case_id"]): t for t in records(moved, "traces.jsonl")}
    assert {key: bool(t.get("reused_from")) for key, t in traces.items()} == {
        ("main", "one"): False, ("main", "two"): False, ("eval_refactor", "one"): True, ("eval_refactor", "two"): True}
    assert traces["main", "one"]["extra"]["system_version"] == f"git:{new}"
    assert traces["main", "one"]["output"]["final_answer"] == "moved says hello"


def test_the_service_runs_the_commit_the_run_recorded_though_the_branch_moved_since(agent_repo, tmp_path):
    import asyncio

    from evalh_pipeline.models import EvalCase, RunVariant
    from evalh_pipeline.systems.base import SystemContext
    from evalh_pipeline.systems.git_branch import GitBranchSystem

    recorded = git(agent_repo, "rev-parse", "main").strip()
    (agent_repo / "app.py").write_text(SERVER.format(answer="moved says"))
    git(agent_repo, "commit", "-qam", "v1.1")  # after the run recorded its commit, before the service starts
    folder = tmp_path / "evals"
    folder.mkdir()
    config = {"repo_path": str(agent_repo), "branch": "main", "start_command": [sys.executable, "app.py", "{port}"],
              "healthcheck": "GET /health", "inner_adapter": "http",
              "inner_config": {"endpoint": "http://localhost:{port}/chat", "body": {"q": "{{ input.q }}"}}}
    variant = RunVariant(name="main", adapter="git_branch", config=config)

    async def answer() -> tuple[str | None, object]:
        system = GitBranchSystem(variant, SystemContext(eval_dir=folder, versions={"main": f"git:{recorded}"}))
        await system.start()
        try:
            response = await system.run(EvalCase(id="one", input={"q": "hello"}), None)
        finally:
            await system.close()
        return response.output.final_answer, response.extra.get("system_version")

    assert asyncio.run(answer()) == ("main says hello", f"git:{recorded}")
