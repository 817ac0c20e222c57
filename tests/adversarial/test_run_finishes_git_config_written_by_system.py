"""Issue 25, item 3: a git workspace ran code the system wrote, after the cell and outside
its timeout: ``core.fsmonitor`` written into ``.git/config`` ran on each of evalh's own
git calls (136 s for a 5 s cell).

evalh's git calls ignore every configuration the workspace can write: fsmonitor, hooks
(``core.hooksPath``), clean/smudge/process filters, diff drivers and ``diff.external``,
``core.sshCommand`` and ``include.path``. Each program here leaves a mark when it runs and
then sleeps: no mark may appear, and evalh's after-state commit still records the change.
Real `evalh run`, real git, a real repository as the source.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.support.evalh_process import run_evalh
from tests.support.seed_workspace import write_seed

pytestmark = pytest.mark.e2e

AGENT = '''
from pathlib import Path

def run(case, variant):
    ws = Path(variant["_workspace_path"])
    git, marks = ws / ".git", variant["config"]["marks"]

    def program(name):
        path = git / f"{name}.sh"
        path.write_text(f"#!/bin/sh\\necho ran >> {marks}/{name}\\ncat >/dev/null 2>&1 &\\nsleep 5\\n")
        path.chmod(0o755)
        return path

    hooks = git / "evil-hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "commit-msg", "post-commit", "post-checkout", "reference-transaction",
                 "post-index-change", "pre-auto-gc", "fsmonitor-watchman"):
        (hooks / hook).write_text(program("hook-" + hook).read_text())
        (hooks / hook).chmod(0o755)
    (git / "evil.cfg").write_text(f"[core]\\n\\tfsmonitor = {program('included-fsmonitor')}\\n")
    with open(git / "config", "a") as config:
        config.write(
            f"[core]\\n\\tfsmonitor = {program('fsmonitor')}\\n\\thooksPath = {hooks}\\n"
            f"\\tsshCommand = {program('ssh')}\\n\\tpager = {program('pager')}\\n"
            f"[filter \\"evil\\"]\\n\\tclean = {program('clean')}\\n\\tsmudge = {program('smudge')}\\n"
            f"\\tprocess = {program('process')}\\n\\trequired = true\\n"
            f"[diff \\"evil\\"]\\n\\ttextconv = {program('textconv')}\\n\\tcommand = {program('diff-command')}\\n"
            f"[diff]\\n\\texternal = {program('external-diff')}\\n"
            f"[include]\\n\\tpath = evil.cfg\\n")
    (ws / ".gitattributes").write_text("* filter=evil diff=evil\\n")
    (ws / "answer.txt").write_text("42\\n")
    return {"final_answer": "done"}
'''


def test_git_settings_the_system_writes_never_run_during_evalhs_git_calls(tmp_path, env):
    folder = tmp_path / "ev"
    seed, marks = folder / "seed", tmp_path / "marks"
    write_seed(seed, "seed\n", git=True)
    marks.mkdir()
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: git_config}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - {{name: a, adapter: python_function, target: "agent:run", marks: "{marks}"}}
        workspace: {{type: git, source_repo: ./seed}}
        evaluators:
          - {{name: done, type: contains_text, config: {{any_of: [done]}}}}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))

    proc = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path, timeout=600)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in marks.iterdir()) == []
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    (artifact,) = (run_dir / "artifacts").rglob("artifact.json")
    record = json.loads(artifact.read_text())
    assert record.get("git_error") is None and record["git_after"], record.get("git_error")
    assert sorted(record["diff"]["added"]) == [".gitattributes", "answer.txt"]
    patch = (artifact.parent / "changes.patch").read_text()
    assert "+42" in patch and "b/answer.txt" in patch
