"""Issue 25, item 7: a FIFO the system leaves in its workspace failed the cell when
``base_path`` is on another file system (``workspace_error: … is a named pipe``: the tree
is copied there, not renamed), and failed the ``command`` evaluator's copy of ``after/``.

Special files are recorded in the manifest and never copied or opened: the cell passes,
the manifest says ``special:fifo``, the command runs in a copy without it. The system is
given a secret too, so the masking of what it wrote walks the same tree.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.e2e

OTHER_FS = Path("/dev/shm")

AGENT = '''
import os
from pathlib import Path

def run(case, variant):
    workspace = Path(variant["_workspace_path"])
    os.mkfifo(workspace / "left.pipe")
    (workspace / "answer.txt").write_text("42\\n")
    return {"final_answer": "wrote answer.txt"}
'''


@pytest.fixture
def other_fs_base(tmp_path):
    if not OTHER_FS.is_dir() or os.stat(OTHER_FS).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another file system than the test's temporary folder")
    base = Path(os.path.realpath(OTHER_FS)) / f"evalh-adversarial-{os.getpid()}-{tmp_path.name}"
    base.mkdir()
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("where", ["same_fs", "other_fs"])
def test_a_fifo_left_in_the_workspace_is_recorded_not_copied(tmp_path, env, request, where):
    folder = tmp_path / "ev"
    (folder / "fixture").mkdir(parents=True)
    (folder / "fixture" / "README.md").write_text("seed\n")
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    base = f", base_path: {request.getfixturevalue('other_fs_base')}" if where == "other_fs" else ""
    check = "import pathlib, sys; sys.exit(pathlib.Path('answer.txt').read_text() != '42\\\\n')"
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: fifo_left}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - {{name: a, adapter: python_function, target: "agent:run", api_key: "${{AGENT_KEY}}"}}
        workspace: {{type: tempdir_snapshot, copy_from: ./fixture{base}}}
        evaluators:
          - name: checked
            type: command
            config: {{command: [python, -c, "{check}"], timeout_seconds: 120}}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))

    proc = run_evalh(["run", str(folder / "eval.yaml")], {**env, "AGENT_KEY": "sk-fifo-0d1e2f3a4b5c"}, tmp_path,
                     timeout=300)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert [t["error"] for t in traces] == [None]
    (result,) = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert result["error"] is None and result["passed"] is True, result
    (artifact,) = (run_dir / "artifacts").rglob("artifact.json")
    record = json.loads(artifact.read_text())
    assert record["after_manifest"]["files"]["left.pipe"]["sha256"] == "special:fifo"
    assert sorted(record["diff"]["added"]) == ["answer.txt", "left.pipe"]
    assert (artifact.parent / "after" / "answer.txt").read_text() == "42\n"
