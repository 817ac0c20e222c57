"""Issue 11, item 20: sparse files in a workspace on another file system.

With ``base_path`` on another file system the workspace tree cannot be renamed into the
artifacts and is copied; a 1 GB sparse file became 1.1 GB of real disk. Copies now keep
holes as holes (the fixture's sparse file and the one the system writes).
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

GIB = 1 << 30
OTHER_FS = Path("/dev/shm")

AGENT = """
import os

def run(case, variant):
    with open(os.path.join(variant["_workspace_path"], "made.img"), "wb") as f:
        f.write(b"start")
        f.seek(1 << 30)
        f.write(b"end")
    return {"final_answer": "done"}
"""


def allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def make_sparse(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.write(b"head")
        f.truncate(size)


@pytest.fixture
def other_fs_base(tmp_path):
    if not OTHER_FS.is_dir() or os.stat(OTHER_FS).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another file system than the test's temporary folder")
    base = Path(os.path.realpath(OTHER_FS)) / f"evalh-adversarial-{os.getpid()}-{tmp_path.name}"
    base.mkdir()
    yield base
    import shutil

    shutil.rmtree(base, ignore_errors=True)


def test_sparse_files_stay_sparse_in_the_artifacts(tmp_path, env, other_fs_base):
    folder = tmp_path / "ev"
    (folder / "fixture").mkdir(parents=True)
    make_sparse(folder / "fixture" / "seed.img", GIB)
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: sparse}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - {{name: a, adapter: python_function, target: agent:run}}
        workspace:
          type: tempdir_snapshot
          copy_from: ./fixture
          base_path: {other_fs_base}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))

    proc = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path, timeout=300)

    assert proc.returncode == 0, proc.stderr
    (after,) = (tmp_path / "runs").glob("*/artifacts/c1/a/after")
    seed, made = after / "seed.img", after / "made.img"
    # The files are whole (same size and bytes where there is data)...
    assert seed.stat().st_size == GIB and made.stat().st_size == GIB + 3
    with open(made, "rb") as f:
        assert f.read(5) == b"start" and (f.seek(GIB), f.read())[1] == b"end"
    # ...and the holes are still holes: a few KB of real disk, not 2 GB.
    assert allocated(seed) < (1 << 20) and allocated(made) < (1 << 20)
    assert os.listdir(other_fs_base) == [] or all(not any(Path(other_fs_base, d).iterdir()) for d in os.listdir(other_fs_base))
