"""promptfoo's `rubricPrompt` (defaultTest's and a test's `options`) on `llm-rubric`: the judge
is sent the prompt promptfoo renders and its reply is read by promptfoo's rule.

matchesLlmRubric calls runJsonGradingPrompt (promptfoo src/matchers.ts) with the vars
``{output, rubric, ...test vars}``; renderLlmRubricPrompt renders a text prompt with Nunjucks, and
the OpenAI provider sends a text as one user message, a JSON list as the messages. The verdict:
the reply's first JSON object, ``pass ?? true`` (a non-boolean: /^(true|yes|pass|y)$/i),
``score`` (not a number: Number(score) when finite, else Number(pass)), then
``pass && score >= threshold`` when the assertion has a threshold; no JSON object fails.
"""

from __future__ import annotations

import textwrap

import pytest
import yaml

from evalh_pipeline.evaluators.promptfoo_graded import rubric_output, rubric_verdict
from evalh_pipeline.importers.promptfoo import import_promptfoo
from tests.support.openai_chat_server import PREFIX, echo_chat_server, grader_says
from tests.support.promptfoo_parity import run_imported_results

# (grader reply, assertion threshold, promptfoo's pass, its score)
VERDICTS = [
    ('{"pass": true, "score": 0.9, "reason": "ok"}', None, True, 0.9),
    ('{"pass": "yes", "score": "0.3"}', 0.5, False, 0.3),
    ('{"score": 0.7}', None, True, 0.7),
    ('{"pass": false}', None, False, 0.0),
    ('Verdict: {"pass": "nope", "score": null}', None, False, 0.0),
    ("no json here", None, False, 0.0),
]
FAILING = '{"pass": false, "reason": "bad"}'


@pytest.mark.parametrize(("reply", "threshold", "passed", "score"), VERDICTS)
def test_llm_rubric_reply_is_read_by_promptfoos_rule(reply, threshold, passed, score):
    assert rubric_verdict(reply, threshold)[:2] == (passed, score)


@pytest.mark.parametrize(("answer", "shown"), [
    ("Paris", "Paris"), ('{"a": 1}', '{"a":1}'), ('"quoted"', "quoted"), ("1.0", "1"), ("true", "true"),
    ("[1, {\"b\": 2}, null]", '1,{"b":2},'), ("null", ""), ("{not json", "{not json"),
])
def test_output_is_shown_to_the_rubric_prompt_as_promptfoo_renders_it(answer, shown):
    # tryParse, processContextForTemplating and Nunjucks' text of the value (src/matchers.ts)
    assert rubric_output(answer) == shown


def test_rubric_prompt_that_does_not_map_or_is_not_carried_is_reported(tmp_path):
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(textwrap.dedent("""\
        prompts: ['Q: {{q}}']
        providers: [openai:gpt-4o-mini]
        defaultTest:
          options:
            rubricPrompt: '{% if q %}Grade {{output}}{% endif %}'
        tests:
          - vars: {q: a}
            assert:
              - type: llm-rubric
                value: is polite
              - type: factuality
                value: Paris
        """))
    imported = import_promptfoo(path, "demo")
    lines = [f.text() for f in imported.report.findings]
    assert lines[2] == ("promptfooconfig.yaml:11: error: tests[0].assert[1]: rubricPrompt on factuality; not used: "
                        "graded with its own prompt (promptfoo's rubricPrompt is carried only into llm-rubric here)")
    assert lines[0].startswith("promptfooconfig.yaml:9: error: tests[0].assert[0]: rubricPrompt: Nunjucks tag "
                               "'{% if q %}'; Nunjucks tag '{% endif %}' does not map; not used: llm-rubric graded by llm_judge's own prompt")
    assert imported.cases[0]["evaluators"][0]["type"] == "llm_judge"


@pytest.mark.integration
def test_rubric_prompt_reaches_the_judge_as_promptfoo_renders_it(tmp_path, monkeypatch):
    seen: list[dict] = []
    with echo_chat_server(seen) as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)  # the judge's endpoint, as promptfoo's grader
        tests = [{"vars": {"reply": "Paris", "topic": "geography"},
                  "assert": [{"type": "llm-rubric", "value": grader_says(reply),
                              **({"threshold": threshold} if threshold is not None else {})}]}
                 for reply, threshold, _, _ in VERDICTS]
        # The last test has its own prompt, as chat messages, over defaultTest's text one.
        tests.append({"vars": {"reply": '{"a": 1}', "topic": "json"},
                      "options": {"rubricPrompt": [{"role": "system", "content": "You grade {{topic}}."},
                                                   {"role": "user", "content": "Output: {{output}}\nRubric: {{rubric}}"}]},
                      "assert": [{"type": "llm-rubric", "value": grader_says(FAILING)}]})
        config = {
            "prompts": [PREFIX + "{{reply}}"],
            "providers": [{"id": "openai:chat:gpt-4o-mini", "config": {"apiBaseUrl": base_url}}],
            "defaultTest": {"options": {"rubricPrompt": "Grade {{ output }} against {{rubric}} for {{topic}}."}},
            "tests": tests,
        }
        (tmp_path / "pf").mkdir()
        path = tmp_path / "pf" / "promptfooconfig.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        results = run_imported_results(path, tmp_path / "evalh", monkeypatch)
    got = {r["case_id"]: (r["passed"], r["score"]) for r in results}
    want = {f"test-{i + 1}": (passed, score) for i, (_, _, passed, score) in enumerate(VERDICTS)}
    assert got == {**want, f"test-{len(VERDICTS) + 1}": (False, 0.0)}
    grading = [body["messages"] for body in seen if not body["messages"][-1]["content"].startswith(PREFIX)]
    assert [{"role": "user", "content": f"Grade Paris against {grader_says(VERDICTS[0][0])} for geography."}] in grading
    # a JSON object answer is rendered as compact JSON (tryParse, then JSON.stringify)
    assert [{"role": "system", "content": "You grade json."},
            {"role": "user", "content": 'Output: {"a":1}\nRubric: ' + grader_says(FAILING)}] in grading
    assert len(grading) == len(VERDICTS) + 1


def test_test_rubric_prompt_over_a_shared_default_llm_rubric_is_reported(tmp_path):
    # promptfoo grades defaultTest's llm-rubric with the test's merged options; the shared
    # eval-level evaluator here has defaultTest's prompt.
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(textwrap.dedent("""\
        prompts: ['Q: {{q}}']
        providers: [openai:gpt-4o-mini]
        defaultTest:
          options:
            rubricPrompt: 'Default: {{output}} / {{rubric}}'
          assert:
            - type: llm-rubric
              value: is polite
        tests:
          - vars: {q: a}
            options:
              rubricPrompt: 'Own: {{output}} / {{rubric}} / {{q}}'
        """))
    imported = import_promptfoo(path, "demo")
    assert [f.text() for f in imported.report.findings] == [
        "promptfooconfig.yaml:10: error: tests[0]: test rubricPrompt over defaultTest's llm-rubric; "
        "defaultTest's llm-rubric is judged with defaultTest's grading prompt in this case"]
    shared = imported.eval_yaml["evaluators"][0]
    assert shared["config"]["rubric_prompt"] == "Default: {{ output }} / {{ rubric }}"
