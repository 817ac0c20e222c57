"""promptfoo's test `threshold` and `assert-set`: what maps (a set without a threshold, whose
verdict is every nested assertion passing) and what the report says promptfoo would do.

The rule is promptfoo's AssertionsResult (src/assertions/assertionsResult.ts, `addResult` and
`testResult`) as runAssertions uses it (src/assertions/index.ts): a test, or an assert-set,
passes when none of its assertions failed; a numeric `threshold` replaces that with
sum(score * weight) / sum(weight) >= threshold. A failed set is a failed assertion of its test.
"""

from __future__ import annotations

import textwrap

import pytest
import yaml

from evalh_pipeline.importers.promptfoo import import_promptfoo
from evalh_pipeline.importers.report import BadSource
from tests.support.openai_chat_server import PREFIX, echo_chat_server
from tests.support.promptfoo_parity import (
    case_verdicts,
    promptfoo_verdicts,
    required_promptfoo,
    run_imported_results,
    write_tests_config,
)


def _config(folder, text: str):
    path = folder / "promptfooconfig.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_assert_set_without_threshold_becomes_its_nested_assertions(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['Q: {{q}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {q: capital}
            assert:
              - type: equals
                value: Paris
              - type: assert-set
                weight: 2
                metric: city
                assert:
                  - type: contains
                    value: Par
                  - type: icontains
                    value: '{{q}}'
        """)
    imported = import_promptfoo(path, "demo")
    assert imported.report.findings == []
    evaluators = imported.cases[0]["evaluators"]
    assert [e["name"] for e in evaluators] == ["assert-1-equals", "assert-2-set-1-contains", "assert-2-set-2-icontains"]
    assert evaluators[2]["config"]["all_of"] == ["capital"]  # nested values see the test's vars


def test_thresholds_become_evaluator_sets_with_the_assertions_weights(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['Q: {{q}}']
        providers: [openai:gpt-4o-mini]
        defaultTest:
          assert:
            - type: icontains
              value: x
        tests:
          - vars: {q: a}
            threshold: 0.5
            assert:
              - type: contains
                value: a
                weight: 3
              - type: assert-set
                threshold: 0.25
                weight: 2
                assert:
                  - type: contains
                    value: b
          - vars: {q: b}
            assert:
              - type: assert-set
                threshold: 0.5
                assert:
                  - type: contains
                    value: c
                  - type: contains
                    value: d
        """)
    imported = import_promptfoo(path, "demo")
    assert imported.report.findings == []
    # A test with a threshold: defaultTest's assertions join its own, so every case carries its copy.
    assert imported.eval_yaml.get("evaluators", []) == []
    first, second = (case["evaluators"] for case in imported.cases)
    assert first == [{"name": "assert-threshold", "type": "evaluator_set", "config": {"threshold": 0.5, "evaluators": [
        {"name": "default-1-icontains", "type": "contains_text",
         "config": {"all_of": ["x"], "none_of": [], "case_sensitive": False}, "weight": 1.0},
        {"name": "assert-1-contains", "type": "contains_text",
         "config": {"all_of": ["a"], "none_of": [], "case_sensitive": True}, "weight": 3.0},
        {"name": "assert-2-set", "type": "evaluator_set", "weight": 2.0, "config": {"threshold": 0.25, "evaluators": [
            {"name": "assert-2-set-1-contains", "type": "contains_text",
             "config": {"all_of": ["b"], "none_of": [], "case_sensitive": True}, "weight": 1.0}]}},
    ]}}]
    # No test threshold: defaultTest's assertion is the case's own, the thresholded set one evaluator_set.
    assert [e["name"] for e in second] == ["default-1-icontains", "assert-1-set"]
    assert second[1]["config"]["threshold"] == 0.5 and len(second[1]["config"]["evaluators"]) == 2


def test_a_threshold_that_is_not_a_number_is_reported_and_not_used(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['Q: {{q}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {q: a}
            threshold: high
            assert: [{type: contains, value: a}]
        """)
    imported = import_promptfoo(path, "demo")
    assert [f.text() for f in imported.report.findings] == [
        "promptfooconfig.yaml:4: error: tests[0]: threshold 'high' is not a number; not used: every assertion must "
        "pass, as in promptfoo"]
    assert imported.cases[0]["evaluators"][0]["name"] == "assert-1-contains"


def test_assert_set_inside_an_assert_set_is_bad_input(tmp_path):
    # src/assertions/validateAssertions.ts: "assert-set must not have child assert-sets"
    path = _config(tmp_path, """\
        prompts: ['Q: {{q}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {q: a}
            assert:
              - type: assert-set
                assert:
                  - type: assert-set
                    assert: [{type: contains, value: a}]
        """)
    with pytest.raises(BadSource, match=r"promptfooconfig.yaml:6 tests\[0\].assert\[0\].assert\[0\]: an assert-set inside"):
        import_promptfoo(path, "demo")


def test_assert_set_without_assertions_is_bad_input(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['Q: {{q}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {q: a}
            assert:
              - type: assert-set
                weight: 2
        """)
    with pytest.raises(BadSource, match=r"promptfooconfig.yaml:6 tests\[0\].assert\[0\]: an assert-set needs 'assert'"):
        import_promptfoo(path, "demo")


@pytest.mark.integration
def test_assert_set_verdicts_match_promptfoos_against_a_loopback_model(tmp_path, monkeypatch):
    # Without thresholds, promptfoo fails the set when one nested assertion fails and the test
    # when its set fails (assertionsResult.ts: pass = !failedReason), whatever the weights.
    replies = {"Paris, France": True, "Paris": False, "Lyon, France": False}
    with echo_chat_server() as base_url:
        config = {
            "prompts": [PREFIX + "{{reply}}"],
            "providers": [{"id": "openai:chat:gpt-4o-mini", "config": {"apiBaseUrl": base_url}}],
            "tests": [{"vars": {"reply": reply}, "assert": [
                {"type": "icontains", "value": "paris"},
                {"type": "assert-set", "weight": 3, "metric": "country",
                 "assert": [{"type": "contains", "value": "France"}, {"type": "not-contains", "value": "Lyon"}]},
            ]} for reply in replies],
        }
        (tmp_path / "pf").mkdir()
        path = tmp_path / "pf" / "promptfooconfig.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        results = run_imported_results(path, tmp_path / "evalh", monkeypatch)
    verdicts = {reply: all(r["passed"] for r in results if r["case_id"] == f"test-{i + 1}")
                for i, reply in enumerate(replies)}
    assert len(results) == 3 * len(replies)
    assert verdicts == replies


def test_default_test_assert_set_that_uses_vars_is_judged_per_case(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['Q: {{q}}']
        providers: [openai:gpt-4o-mini]
        defaultTest:
          assert:
            - type: assert-set
              assert:
                - type: icontains
                  value: '{{q}}'
        tests:
          - vars: {q: one}
          - vars: {q: two}
        """)
    imported = import_promptfoo(path, "demo")
    assert imported.report.findings == []
    assert imported.eval_yaml.get("evaluators", []) == []
    assert [c["evaluators"][0]["config"]["all_of"] for c in imported.cases] == [["one"], ["two"]]
    assert imported.cases[0]["evaluators"][0]["name"] == "default-1-set-1-icontains"


# (test, reply, promptfoo's verdict, why): each verdict follows AssertionsResult.testResult
# (src/assertions/assertionsResult.ts): score = sum(score * weight) / sum(weight) over the test's
# assertions (an assert-set counts as one, with its own score and its weight; runAssertions in
# src/assertions/index.ts), pass = score >= threshold when the test (or set) has a numeric
# threshold, else no assertion failed. A contains assertion scores 1 or 0 (src/assertions/contains.ts).
PARIS, FRANCE = {"type": "contains", "value": "Paris"}, {"type": "contains", "value": "France"}
THRESHOLD_ROWS = [
    ({"threshold": 0.5, "assert": [PARIS, FRANCE]}, "Paris", True, "(1 + 0) / 2 = 0.5 >= 0.5, though France failed"),
    ({"threshold": 0.5, "assert": [PARIS, FRANCE]}, "Lyon", False, "0 < 0.5"),
    ({"threshold": 0.7, "assert": [{**PARIS, "weight": 3}, FRANCE]}, "Paris", True, "(3 + 0) / 4 = 0.75 >= 0.7"),
    ({"threshold": 0.7, "assert": [{**PARIS, "weight": 3}, FRANCE]}, "France", False, "(0 + 1) / 4 = 0.25 < 0.7"),
    ({"assert": [{"type": "icontains", "value": "paris"},
                 {"type": "assert-set", "threshold": 0.5, "assert": [PARIS, FRANCE]}]}, "Paris", True,
     "the set: 0.5 >= 0.5 passes; no test threshold: every assertion passed"),
    ({"assert": [{"type": "assert-set", "threshold": 0.6, "assert": [PARIS, FRANCE]}]}, "Paris", False,
     "the set: 0.5 < 0.6 fails, so the test fails"),
    ({"threshold": 0.6, "assert": [PARIS, {"type": "assert-set", "weight": 2, "assert": [FRANCE, {"type": "contains",
                                                                                                "value": "Europe"}]}]},
     "Paris, France", True, "set fails (Europe missing) but scores 0.5: (1 + 0.5 * 2) / 3 = 0.67 >= 0.6"),
    ({"threshold": 0.6, "assert": [PARIS, {"type": "assert-set", "weight": 2, "assert": [FRANCE, {"type": "contains",
                                                                                                "value": "Europe"}]}]},
     "Paris", False, "(1 + 0) / 3 = 0.33 < 0.6"),
    ({"threshold": 0, "assert": [FRANCE]}, "Paris", True, "a threshold of 0 is honoured: 0 >= 0"),
    ({"assert": [PARIS, {**FRANCE, "weight": 0}]}, "Paris", True,
     "no threshold, France failed but has weight 0: runAssertionInternal (src/assertions/index.ts) passes it"),
]
# defaultTest: its threshold applies to a test without one, its assertions join each test's.
DEFAULT_ROWS = [
    ({"assert": [FRANCE]}, "Paris", True, "defaultTest threshold 0.5: (1 + 0) / 2 = 0.5"),
    ({"assert": [FRANCE]}, "Rome", False, "0 < 0.5"),
    ({"threshold": 1, "assert": [FRANCE]}, "Paris", False, "the test's own threshold 1: 0.5 < 1"),
]


def _threshold_config(folder, base_url, rows, default=None):
    return write_tests_config(folder, base_url, [{"vars": {"reply": reply}, **test} for test, reply, _, _ in rows],
                              default)


def _case_verdicts(results, rows):
    return case_verdicts(results, len(rows))


ROW_SETS = pytest.mark.parametrize(("rows", "default"), [(THRESHOLD_ROWS, None),
                                                       (DEFAULT_ROWS, {"threshold": 0.5, "assert": [PARIS]})],
                                   ids=["test-thresholds", "default-test-threshold"])


@pytest.mark.integration
@ROW_SETS
def test_threshold_verdicts_follow_promptfoos_rule_against_a_loopback_model(tmp_path, monkeypatch, rows, default):
    with echo_chat_server() as base_url:
        path = _threshold_config(tmp_path / "pf", base_url, rows, default)
        ours = _case_verdicts(run_imported_results(path, tmp_path / "evalh", monkeypatch), rows)
    assert ours == [want for _, _, want, _ in rows]


@pytest.mark.integration
@ROW_SETS
def test_promptfoo_itself_gives_the_same_threshold_verdicts(tmp_path, monkeypatch, rows, default):
    command = required_promptfoo()
    with echo_chat_server() as base_url:
        path = _threshold_config(tmp_path / "pf", base_url, rows, default)
        theirs = promptfoo_verdicts(command, path, base_url, tmp_path)
        ours = _case_verdicts(run_imported_results(path, tmp_path / "evalh", monkeypatch), rows)
    assert theirs == ours == [want for _, _, want, _ in rows]
