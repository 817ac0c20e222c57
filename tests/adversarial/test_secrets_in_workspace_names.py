"""Issue 25, item 5: a secret used as a workspace file *name* (``cache_<token>.json``)
reached ``after/``, ``artifact.json``, ``diff.txt`` and ``evalh inspect``: contents were
masked, names were not.

Names (of files, folders and link targets) are masked like contents, for both workspace
kinds. Real `evalh run` and `evalh inspect`; a real git repository as the git seed.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from tests.adversarial.leaks import files_containing
from tests.support.evalh_process import run_evalh
from tests.support.seed_workspace import write_seed

pytestmark = pytest.mark.e2e

SECRET = "sk-namesleak-5e6f7a8b9c0d"  # ${AGENT_KEY}

AGENT = '''
import os
from pathlib import Path

def run(case, variant):
    workspace, key = Path(variant["_workspace_path"]), variant["config"]["api_key"]
    (workspace / f"cache_{key}.json").write_text("{}\\n")
    (workspace / f"dir_{key}").mkdir()
    (workspace / f"dir_{key}" / "inner.txt").write_text("inner\\n")
    os.symlink(f"cache_{key}.json", workspace / "latest")
    return {"final_answer": "cached"}
'''


def names_containing(roots: list[Path], secret: str) -> list[str]:
    """Every path under ``roots`` whose name, or whose link target, holds ``secret``."""
    found = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                if secret in name or (os.path.islink(path) and secret in os.readlink(path)):
                    found.append(path)
    return found


@pytest.mark.parametrize("kind", ["tempdir_snapshot", "git"])
def test_a_secret_used_as_a_file_name_is_stored_masked(tmp_path: Path, env: dict, kind: str) -> None:
    folder = tmp_path / "ev"
    write_seed(folder / "seed", "seed\n", git=kind == "git")
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: name_leak_{kind}}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - {{name: a, adapter: python_function, target: "agent:run", api_key: "${{AGENT_KEY}}"}}
        workspace: {{type: {kind}, copy_from: ./seed}}
        evaluators:
          - {{name: cached, type: contains_text, config: {{any_of: [cached]}}}}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))
    env = {**env, "AGENT_KEY": SECRET}

    proc = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    shown = run_evalh(["inspect", str(run_dir), "--case", "c1", "--variant", "a"], env, tmp_path)

    assert shown.returncode == 0, shown.stderr
    (artifact,) = (run_dir / "artifacts").rglob("artifact.json")
    after = artifact.parent / "after"
    assert (after / "cache_***MASKED***.json").read_text() == "{}\n"
    assert (after / "dir_***MASKED***" / "inner.txt").read_text() == "inner\n"
    assert os.readlink(after / "latest") == "cache_***MASKED***.json"
    added = json.loads(artifact.read_text())["diff"]["added"]
    assert sorted(added) == ["cache_***MASKED***.json", "dir_***MASKED***/inner.txt", "latest"]
    assert "cache_***MASKED***.json" in (artifact.parent / "diff.txt").read_text()
    roots = [tmp_path / "runs", tmp_path / "dagster_home"]
    assert names_containing(roots, SECRET) == [] and files_containing(roots, SECRET) == []
    for out in (proc.stdout, proc.stderr, shown.stdout, shown.stderr):
        assert SECRET not in out
