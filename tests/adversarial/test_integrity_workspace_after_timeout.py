"""Item 3: a sync system that timed out and keeps writing into its workspace must not change
the stored artifact: the artifact's after/ tree equals its manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalh_pipeline.workspaces.manifest import hash_bytes
from evalh_pipeline.store.object_storage import artifact_key
from tests.support.evalh_process import run_evalh

AGENT = '''
import os, time

def run(case, variant):
    # Keeps an open handle and writes through it long after its 1 s timeout.
    with open(os.path.join(variant["_workspace_path"], "log.txt"), "a") as log:
        for i in range(6000):
            log.write(f"line {i}\\n")
            log.flush()
            time.sleep(0.005)
    return {"final_answer": "done"}
'''


def _digest(path: Path) -> str:
    return hash_bytes(path.read_bytes())  # the manifest's algorithm (blake3 when installed)


@pytest.mark.e2e
@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_artifact_equals_its_manifest_after_a_timeout(tmp_path: Path, env: dict[str, str], isolation: str) -> None:
    folder = tmp_path / f"writer_{isolation}"
    (folder / "seed").mkdir(parents=True)
    (folder / "seed" / "keep.txt").write_text("keep\n")
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (folder / "eval.yaml").write_text(f"""
eval: {{name: writer_{isolation}}}
dataset: {{type: jsonl, path: cases.jsonl}}
systems:
  - {{name: only, adapter: python_function, target: "agent:run", timeout_seconds: 1, isolation: {isolation}}}
workspace: {{type: tempdir_snapshot, copy_from: ./seed}}
evaluators:
  - {{name: changed, type: git_diff, config: {{expected_added: [log.txt]}}}}
output: [{{type: local_files, path: {folder / "runs"}}}]
""")
    done = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)
    # Its only cell timed out: no system answered, so the run fails, after its trace and
    # artifact are written (the cause first).
    assert done.returncode == 2, done.stderr
    assert "\nerror: timeout: no response within 1s (every cell;" in done.stderr, done.stderr
    (run_dir,) = [p for p in (folder / "runs").iterdir() if not p.name.startswith(".")]
    (trace,) = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert trace["error"]["type"] == "timeout"
    cell = run_dir / "artifacts" / artifact_key("c1", "only")
    artifact = json.loads((cell / "artifact.json").read_text())
    files = artifact["after_manifest"]["files"]
    assert "log.txt" in files
    stored = {p.relative_to(cell / "after").as_posix() for p in (cell / "after").rglob("*") if p.is_file()}
    assert stored == set(files)
    for name, entry in files.items():
        assert (cell / "after" / name).stat().st_size == entry["size"], name
        assert _digest(cell / "after" / name) == entry["sha256"], name
