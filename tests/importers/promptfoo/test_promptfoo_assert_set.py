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
from tests.support.promptfoo_parity import run_imported_results


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


def test_threshold_on_a_test_a_default_test_and_an_assert_set_reports_promptfoos_rule(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['Q: {{q}}']
        providers: [openai:gpt-4o-mini]
        defaultTest:
          threshold: 0.4
        tests:
          - vars: {q: a}
            threshold: 0.5
            assert:
              - type: contains
                value: a
              - type: assert-set
                threshold: 0.25
                assert:
                  - type: contains
                    value: b
        """)
    imported = import_promptfoo(path, "demo")
    lines = [f.text() for f in imported.report.findings]
    rule = ("promptfoo passes the test when the weighted mean score of its assertions is >= {} even if some fail; "
            "here the case passes only when every assertion passes")
    assert lines == [
        f"promptfooconfig.yaml:3: error: defaultTest: defaultTest threshold 0.4; not used: {rule.format(0.4)}",
        f"promptfooconfig.yaml:6: error: tests[0]: test threshold 0.5; not used: {rule.format(0.5)}",
        f"promptfooconfig.yaml:11: error: tests[0].assert[1]: assert-set threshold 0.25; not used: {rule.format(0.25)}",
    ]
    # the set's assertions are still judged, each on its own
    assert [e["name"] for e in imported.cases[0]["evaluators"]] == ["assert-1-contains", "assert-2-set-1-contains"]


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
