"""A dataset row's own ``evaluators``: checked as eval.yaml's entries are, each problem one
line naming the dataset file, the line and the key."""

from __future__ import annotations

import json
import textwrap

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.config.dataset import select_cases
from evalh_pipeline.runner.loading import load_eval
from tests.support.evals import write_eval


def _yaml_eval(tmp_path, cases_yaml: str):
    path = write_eval(tmp_path / "toy", cases=1)
    (path.parent / "cases.yaml").write_text(textwrap.dedent(cases_yaml))
    path.write_text(path.read_text().replace("type: jsonl\n  path: cases.jsonl", "type: yaml\n  path: cases.yaml"))
    return load_eval(path)


def _error(spec) -> str:
    with pytest.raises(ConfigError) as caught:
        list(select_cases(spec, "r1"))
    assert len(caught.value.issues) == 1
    return str(caught.value)


def test_case_evaluators_load_validated_with_their_type_config(tmp_path):
    spec = _yaml_eval(tmp_path, """
        cases:
          - id: a
            input: {answer: x}
            evaluators:
              - name: says_x
                type: regex_match
                config: {pattern: "x"}
          - id: b
            input: {answer: y}
        """)
    a, b = select_cases(spec, "r1")
    assert [(e.name, e.type, e.config) for e in a.evaluators] == [("says_x", "regex_match", {"pattern": "x"})]
    assert b.evaluators == []
    # A case without its own evaluators is written as before (no empty key in the snapshot).
    assert "evaluators" not in json.loads(b.model_dump_json())


def test_a_name_of_an_eval_evaluator_is_a_one_line_error_at_its_line(tmp_path):
    spec = _yaml_eval(tmp_path, """
        cases:
          - id: a
            input: {answer: x}
            evaluators:
              - name: mentions_paris
                type: regex_match
                config: {pattern: "x"}
        """)
    assert _error(spec) == ("cases.yaml:6 cases[0].evaluators[0].name: 'mentions_paris' is already an evaluator "
                            "of the eval: a case's own evaluators need names of their own")


def test_a_name_repeated_within_a_case_is_an_error(tmp_path):
    spec = _yaml_eval(tmp_path, """
        cases:
          - id: a
            input: {answer: x}
            evaluators:
              - {name: mine, type: regex_match, config: {pattern: "x"}}
              - {name: mine, type: contains_text}
        """)
    assert _error(spec) == ("cases.yaml:7 cases[0].evaluators[1].name: duplicate name 'mine': "
                            "names must be unique within the case")


def test_the_same_name_on_different_cases_is_allowed(tmp_path):
    spec = _yaml_eval(tmp_path, """
        cases:
          - {id: a, input: {answer: x}, evaluators: [{name: mine, type: regex_match, config: {pattern: "x"}}]}
          - {id: b, input: {answer: y}, evaluators: [{name: mine, type: regex_match, config: {pattern: "y"}}]}
        """)
    assert [c.evaluators[0].config["pattern"] for c in select_cases(spec, "r1")] == ["x", "y"]


@pytest.mark.parametrize(("entry", "expected"), [
    ({"name": "mine", "type": "no_such_type"}, "cases.jsonl:2 evaluators[0].type: unknown evaluator type 'no_such_type'"),
    ({"name": "mine", "type": "regex_match", "config": {"pattern": "x", "patern": 1}},
     "cases.jsonl:2 evaluators[0].config.patern: unknown key for evaluator type 'regex_match' (did you mean 'pattern'?)"),
    ({"name": "mine", "type": "regex_match", "config": {}}, "cases.jsonl:2 evaluators[0].config.pattern: "),
    ({"name": "mine", "type": "regex_match", "weight": 2}, "cases.jsonl:2 evaluators[0].weight: unknown key"),
    ({"type": "regex_match"}, "cases.jsonl:2 evaluators[0].name: required key is missing"),
])
def test_a_bad_entry_in_a_jsonl_row_is_one_line_naming_the_row(tmp_path, entry, expected):
    path = write_eval(tmp_path / "toy", cases=2)
    dataset = path.parent / "cases.jsonl"
    rows = [json.loads(line) for line in dataset.read_text().splitlines()]
    rows[1]["evaluators"] = [entry]
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert _error(load_eval(path)).startswith(expected)


def test_evaluators_that_are_not_a_list_are_an_error(tmp_path):
    spec = _yaml_eval(tmp_path, """
        cases:
          - id: a
            evaluators: {name: mine, type: contains_text}
        """)
    assert _error(spec).startswith("cases.yaml:4 cases[0].evaluators: a case's evaluators must be a list")
