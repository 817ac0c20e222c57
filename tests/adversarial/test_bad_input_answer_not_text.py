"""Issue 25, item 8: a ``python_function`` that returns an object as ``final_answer`` had
it stored as ``<agent.Weird object at 0x…>`` and judged (``contains_text`` passed on ``0x``).

A value that is not text is a cell error (``unserializable_output``), like the same object
in ``structured``: recorded as text, never judged. Numbers stay text as eval-harness made
them. Both isolation modes; real `evalh run`.
"""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.e2e

AGENT = '''
class Weird:
    pass

def run(case, variant):
    kind = case["input"]["kind"]
    if kind == "object":
        return {"final_answer": Weird()}
    if kind == "in_structured":
        return {"final_answer": "0x fine", "structured": {"value": Weird()}}
    return {"final_answer": 10}
'''


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_an_object_as_the_answer_errors_the_cell_and_is_not_judged(tmp_path, env, isolation):
    folder = tmp_path / "ev"
    folder.mkdir()
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": kind, "input": {"kind": kind}}) + "\n"
                                                for kind in ("object", "in_structured", "number")))
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: not_text}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - {{name: a, adapter: python_function, target: "agent:run", isolation: {isolation}}}
        evaluators:
          - {{name: hex_or_ten, type: contains_text, config: {{any_of: [0x, "10"]}}}}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))

    proc = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)

    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    traces = {t["case_id"]: t for t in map(json.loads, (run_dir / "traces.jsonl").read_text().splitlines())}
    for case in ("object", "in_structured"):
        assert traces[case]["error"]["type"] == "unserializable_output", traces[case]
    assert "output.final_answer (Weird)" in traces["object"]["error"]["message"]
    assert traces["object"]["output"]["final_answer"] == "<unserializable Weird: <agent.Weird object>>"
    assert traces["number"]["error"] is None and traces["number"]["output"]["final_answer"] == "10"
    results = {r["case_id"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}
    assert results["number"]["passed"] is True and results["object"]["passed"] is False
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    assert [(v["cases_passed"], v["cases_errored"]) for v in summary["variants"]] == [(1, 2)]
