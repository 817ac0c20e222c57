"""Issue 11, item 17: input files that are not UTF-8.

A Latin-1 byte in a JSONL dataset ended the run with exit 2 and no file or line, and
``--dry-run`` printed a traceback. Every input file now says ``file:line: not UTF-8``
(exit 1), before anything is written.
"""

from __future__ import annotations

import json

import pytest

from tests.adversarial.leaks import error_text
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

EVAL = """\
eval: {{name: encodings}}
dataset: {{type: {kind}, path: {cases}}}
systems:
  - {{name: a, adapter: python_function, target: agent:run}}
"""


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    return tmp_path


def problem(proc) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    return error_text(proc.stderr)


@pytest.mark.parametrize("args", [["run", "--dry-run", "eval.yaml"], ["run", "eval.yaml"]], ids=["dry-run", "run"])
def test_a_latin1_line_in_a_jsonl_dataset_names_the_file_and_line(folder, env, args):
    good = json.dumps({"id": "c1", "input": {"q": "ok"}}).encode()
    bad = '{"id": "c2", "input": {"q": "caf\u00e9"}}'.encode("latin-1")
    (folder / "cases.jsonl").write_bytes(good + b"\n" + good.replace(b"c1", b"c3") + b"\n" + bad + b"\n")
    (folder / "eval.yaml").write_text(EVAL.format(kind="jsonl", cases="cases.jsonl"))

    message = problem(run_evalh(args, env, folder))

    assert message.startswith("cases.jsonl:3: not UTF-8"), message
    assert not any((folder / "runs").glob("*/run.json"))


def test_a_latin1_yaml_dataset_names_the_file_and_line(folder, env):
    (folder / "cases.yaml").write_bytes("cases:\n  - {id: c1, input: {q: ok}}\n  - {id: c2, input: {q: caf\u00e9}}\n"
                                        .encode("latin-1"))
    (folder / "eval.yaml").write_text(EVAL.format(kind="yaml", cases="cases.yaml"))
    assert problem(run_evalh(["run", "--dry-run", "eval.yaml"], env, folder)).startswith("cases.yaml:3: not UTF-8")


def test_a_latin1_eval_yaml_names_the_line(folder, env):
    (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    text = EVAL.format(kind="jsonl", cases="cases.jsonl") + "metadata: {owner: Ren\u00e9}\n"
    (folder / "eval.yaml").write_bytes(text.encode("latin-1"))
    assert problem(run_evalh(["run", "--dry-run", "eval.yaml"], env, folder)).startswith("eval.yaml:5: not UTF-8")
