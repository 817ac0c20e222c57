"""Issue 25, item 12: a dataset or price table that is a FIFO, a device or a directory was
reported as "file not found". The error says what it is (``… is a directory, not a file``),
and a FIFO or a device is never opened (the check never blocks). Real FIFOs, a real device
(/dev/null) and a real folder; `evalh run --dry-run` as a user runs it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.adversarial.leaks import error_text
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.e2e

KINDS = {"directory": "a directory", "fifo": "a named pipe (FIFO)", "device": "a character device"}


def make(path: Path, kind: str) -> Path:
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/null")  # a device, reached as users reach one
    return path


def write_eval(folder: Path, dataset: str, price_table: str | None = None) -> None:
    (folder / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    (folder / "eval.yaml").write_text(
        f"eval: {{name: kinds}}\ndataset: {{type: jsonl, path: {dataset}}}\n"
        "systems:\n  - {name: a, adapter: python_function, target: agent:run}\n"
        + (f"metrics: {{price_table_path: {price_table}}}\n" if price_table else ""))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_dataset_that_is_not_a_file_says_what_it_is(tmp_path, env, kind):
    make(tmp_path / "cases.jsonl", kind)
    write_eval(tmp_path, "cases.jsonl")

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    resolved = os.path.realpath(tmp_path / "cases.jsonl")  # the device: /dev/null
    assert error_text(proc.stderr) == f"eval.yaml:2 dataset.path: {resolved} is {KINDS[kind]}, not a file"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_price_table_that_is_not_a_file_says_what_it_is(tmp_path, env, kind):
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    make(tmp_path / "prices.yaml", kind)
    write_eval(tmp_path, "cases.jsonl", "prices.yaml")

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    resolved = os.path.realpath(tmp_path / "prices.yaml")
    assert error_text(proc.stderr) == (f"eval.yaml:5 metrics.price_table_path: price table {resolved} "
                                       f"is {KINDS[kind]}, not a file")
