"""A log whose samples ran several epochs imports one case per sample, scored by the task's
epoch reducers as Inspect reduces them (inspect_ai src/inspect_ai/scorer/_reducer/reducer.py)."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from evalh_pipeline.importers.inspect_epochs import reduce_values, value_to_float
from evalh_pipeline.importers.inspect_log import import_inspect_log
from evalh_pipeline.importers.writing import write_tree
from evalh_pipeline.runner.loading import load_eval

# match per epoch: q1 C, I, C; q2 I, I, C
EPOCHS = {"q1": ["C", "I", "C"], "q2": ["I", "I", "C"]}


def _log(tmp_path, reducers):
    samples = [{"id": sid, "epoch": n + 1, "input": f"Q {sid}", "target": "4",
                "output": {"completion": f"answer {sid} {n + 1}"}, "scores": {"match": {"value": value}}}
               for sid, values in EPOCHS.items() for n, value in enumerate(values)]
    config = {} if reducers is None else {"epochs": 3, "epochs_reducer": reducers}
    log = {"version": 2, "status": "success", "samples": samples,
           "eval": {"task": "arith", "model": "openai/m", "config": config}}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    return path


def _scores(imported) -> dict:
    cases = yaml.safe_load(imported.files["cases.yaml"])["cases"]
    return {c["id"]: {k: (v["value"], v["passed"]) for k, v in c["embedded_trace"]["extra"]["inspect_scores"].items()}
            for c in cases}


def test_the_default_mean_makes_one_case_per_sample_replaying_its_first_epoch(tmp_path):
    imported = import_inspect_log(_log(tmp_path, None))
    cases = yaml.safe_load(imported.files["cases.yaml"])["cases"]
    assert [c["id"] for c in cases] == ["q1", "q2"]
    assert cases[0]["embedded_trace"]["output"]["final_answer"] == "answer q1 1"
    assert cases[0]["metadata"]["epochs"] == [1, 2, 3]
    assert _scores(imported) == {"q1": {"match": (pytest.approx(2 / 3), False)}, "q2": {"match": (pytest.approx(1 / 3), False)}}
    (note,) = imported.report.findings
    assert note.severity == "note" and "3 epoch(s) per sample, reduced with mean" in note.text()
    write_tree(tmp_path / "out", imported.files)
    load_eval(tmp_path / "out" / "eval.yaml", {}, strict=False)


def test_several_reducers_are_one_evaluator_each(tmp_path):
    imported = import_inspect_log(_log(tmp_path, ["at_least_2", "max", "mode", "pass_at_2"]))
    assert _scores(imported) == {
        "q1": {"match_at_least_2": (1, True), "match_max": ("C", True), "match_mode": ("C", True),
               "match_pass_at_2": (1.0, True)},
        # pass@2 with 1 of 3 correct: 1 - (2/3 * 1/2) = 2/3
        "q2": {"match_at_least_2": (0, False), "match_max": ("C", True), "match_mode": ("I", False),
               "match_pass_at_2": (pytest.approx(2 / 3), False)}}
    names = [e["name"] for e in yaml.safe_load(imported.files["eval.yaml"])["evaluators"]]
    assert names == ["match_at_least_2", "match_max", "match_mode", "match_pass_at_2"]


def test_an_unknown_reducer_is_reported_and_the_epochs_stay_cases(tmp_path):
    imported = import_inspect_log(_log(tmp_path, ["my_reducer"]))
    assert [f.severity for f in imported.report.findings] == ["error", "error"]
    assert "epoch reducer 'my_reducer' is not one evalh applies" in imported.report.findings[0].text()
    assert len(yaml.safe_load(imported.files["cases.yaml"])["cases"]) == 6


def test_reducers_follow_inspects_definitions():
    assert [value_to_float(v) for v in ("C", "P", "I", "yes", "0.25", True, "maybe")] == [1, 0.5, 0, 1, 0.25, 1, 0]
    assert reduce_values("median", [0.0, 0.5, 1.0]) == 0.5
    assert reduce_values("pass_2", ["C", "C", "I"]) == pytest.approx(1 / 3)  # C(2,2) / C(3,2)
    assert reduce_values("pass_at_2", ["I", "I", "I"]) == 0.0
    assert math.isnan(reduce_values("pass_at_4", ["C", "I"]))  # fewer epochs than k
    assert math.isnan(reduce_values("mean", [float("nan")]))
