"""Issue 25, item 2: a FIFO or a device in a ``copy_from`` fixture hung ``evalh run``
before the first cell (the fixture fingerprint opened every file of the tree).

Special files are recorded, never opened: the run ends, the fingerprint in run.json
names them, and the workspace's manifest records them by kind. Real FIFOs and a real
character device (``mknod``, needs root) in a real fixture folder, both workspace kinds.
"""

from __future__ import annotations

import json
import os
import stat
import textwrap
from pathlib import Path

import pytest

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.e2e

AGENT = '''
from pathlib import Path

def run(case, variant):
    (Path(variant["_workspace_path"]) / "out.txt").write_text("done\\n")
    return {"final_answer": "done"}
'''


def make_special(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # a /dev/zero: endless when read


@pytest.mark.parametrize("special", ["fifo", "char-device"])
@pytest.mark.parametrize("kind", ["tempdir_snapshot", "git"])
def test_a_fifo_or_device_in_the_fixture_is_recorded_and_the_run_ends(tmp_path, env, kind, special):
    folder = tmp_path / "ev"
    fixture = folder / "fixture"
    (fixture / "sub").mkdir(parents=True)
    (fixture / "README.md").write_text("seed\n")
    make_special(fixture / "sub" / "pipe", special)
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    workspace = ("{type: git, source_repo: ./fixture, init_if_missing: true}" if kind == "git"
                 else "{type: tempdir_snapshot, copy_from: ./fixture}")
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: special_fixture}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - {{name: a, adapter: python_function, target: "agent:run"}}
        workspace: {workspace}
        evaluators:
          - {{name: done, type: contains_text, config: {{any_of: [done]}}}}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))

    # A hang fails here (the run itself takes seconds).
    proc = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path, timeout=300)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    fixtures = json.loads((run_dir / "run.json").read_text())["fixtures"]
    assert fixtures["workspace"].startswith("sha256:"), fixtures
    (artifact,) = (run_dir / "artifacts").rglob("artifact.json")
    record = json.loads(artifact.read_text())
    entry = record["after_manifest"]["files"]["sub/pipe"]
    assert entry["sha256"] == f"special:{special}" and entry["size"] == 0
    assert record["diff"]["added"] == ["out.txt"]
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert [t["error"] for t in traces] == [None]
