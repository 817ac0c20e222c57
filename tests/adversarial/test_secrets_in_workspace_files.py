"""A system that writes a secret it was given into a file of its workspace: the artifact
(after/ tree, diff, patch, manifest hashes) stores the file masked, for both workspace kinds.

Real `evalh run`; git kind with a real git repository as the seed."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.adversarial.leaks import files_containing
from tests.support.evalh_process import run_evalh
from tests.support.seed_workspace import write_seed

pytestmark = pytest.mark.e2e

SECRET = "sk-wsleak-8c1d2e3f4a5b"  # ${AGENT_KEY}

AGENT = '''
from pathlib import Path

def run(case, variant):
    workspace = Path(variant["_workspace_path"])
    (workspace / "notes.txt").write_text("called with key " + variant["config"]["api_key"] + "\\n")
    (workspace / "README.md").write_text("seed readme, edited with " + variant["config"]["api_key"] + "\\n")
    return {"final_answer": "wrote notes"}
'''


@pytest.mark.parametrize("kind", ["tempdir_snapshot", "git"])
def test_a_secret_the_system_writes_into_its_workspace_is_stored_masked(tmp_path: Path, env: dict, kind: str) -> None:
    folder = tmp_path / "ev"
    write_seed(folder / "seed", "seed readme\n", git=kind == "git")
    (folder / "writer.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {"q": 1}}) + "\n")
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: ws_leak_{kind}}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - {{name: writer, adapter: python_function, target: "writer:run", api_key: "${{AGENT_KEY}}"}}
        workspace: {{type: {kind}, copy_from: ./seed}}
        evaluators:
          - {{name: wrote, type: contains_text, config: {{any_of: [notes]}}}}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))
    proc = run_evalh(["run", str(folder / "eval.yaml")], {**env, "AGENT_KEY": SECRET}, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    (artifact,) = (run_dir / "artifacts").rglob("artifact.json")
    after = artifact.parent / "after"
    assert (after / "notes.txt").read_text() == "called with key ***MASKED***\n"
    assert (after / "README.md").read_text() == "seed readme, edited with ***MASKED***\n"
    record = json.loads(artifact.read_text())
    assert sorted(record["diff"]["added"]) == ["notes.txt"] and record["diff"]["modified"] == ["README.md"]
    assert files_containing([tmp_path / "runs", tmp_path / "dagster_home"], SECRET) == []
