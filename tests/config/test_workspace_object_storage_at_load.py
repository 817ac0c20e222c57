"""Issue 32: ``workspace.object_storage`` is checked when the eval loads, as ``output[]`` is.

``memory://`` loaded, and the run's artifacts were gone when ``evalh run`` exited, so
``re-evaluate`` later asked for a ``workspace:`` block the eval had. A cloud URL whose
fsspec backend (s3fs, gcsfs) is not installed passed ``--dry-run`` and failed only after
the run folder existed. Both are refused at load now, with one line, nothing written.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.adversarial.leaks import error_text
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration


def _eval(tmp_path, url: str) -> None:
    (tmp_path / "fixture").mkdir()
    (tmp_path / "fixture" / "a.txt").write_text("a\n")
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (tmp_path / "eval.yaml").write_text(
        "eval: {name: stored}\ndataset: {type: jsonl, path: cases.jsonl}\n"
        "systems:\n  - {name: a, adapter: python_function, target: agent:run}\n"
        f"workspace:\n  type: tempdir_snapshot\n  copy_from: ./fixture\n  object_storage: '{url}'\n")


RUN_ARGS = [["run", "--dry-run", "eval.yaml"], ["run", "eval.yaml"]]


@pytest.mark.parametrize("args", RUN_ARGS, ids=["dry-run", "run"])
def test_memory_object_storage_is_refused_at_load(tmp_path, env, args):
    _eval(tmp_path, "memory://artifacts")

    proc = run_evalh(args, env, tmp_path)

    assert proc.returncode == 1, proc.stderr
    assert error_text(proc.stderr) == (
        "eval.yaml:8 workspace.object_storage: 'memory://artifacts': memory:// keeps artifacts in this process's "
        "memory, gone when it exits; re-evaluate, inspect and view read them later: use a persistent URL "
        "(file://, s3://, gs://, az://) or leave the key out to keep them in the run folder")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("protocol,package", [("s3", "s3fs"), ("gs", "gcsfs")])
@pytest.mark.parametrize("args", RUN_ARGS, ids=["dry-run", "run"])
def test_a_missing_cloud_backend_is_refused_before_the_run_folder_exists(tmp_path, env, args, protocol, package):
    if importlib.util.find_spec(package) is not None:
        pytest.skip(f"{package} is installed here: its absence cannot be shown")
    _eval(tmp_path, f"{protocol}://bucket/artifacts")

    proc = run_evalh(args, env, tmp_path)

    assert proc.returncode == 1, proc.stderr
    message = error_text(proc.stderr)
    assert message.startswith(f"eval.yaml:8 workspace.object_storage: '{protocol}://bucket/artifacts': the "
                              f"{protocol}:// backend is not installed ("), message
    assert message.endswith("; see the s3, gcs and azure extras)"), message
    assert not (tmp_path / "runs").exists()


def test_a_file_url_object_storage_loads(tmp_path, env):
    _eval(tmp_path, f"file://{tmp_path / 'store'}")

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
