"""`evalh import promptfoo`: what a promptfoo config becomes, what the report says, and bad input."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from evalh_pipeline.config.dataset import select_cases
from evalh_pipeline.importers.promptfoo import import_promptfoo
from evalh_pipeline.importers.report import BadSource
from evalh_pipeline.importers.writing import write_tree
from evalh_pipeline.importers.promptfoo.tests import assertion_from_string
from evalh_pipeline.runner.loading import load_eval


def _config(folder, text: str, **files: str):
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
        (folder / name.replace("__", "/")).write_text(textwrap.dedent(content))
    path = folder / "promptfooconfig.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_prompts_times_providers_become_variants_with_their_requests(tmp_path):
    path = _config(tmp_path, """\
        prompts:
          - 'Translate to {{language}}: {{ input }}'
          - file://chat.json
        providers:
          - openai:gpt-4o-mini
          - id: anthropic:messages:claude-3-5-haiku-latest
            config: {temperature: 0, max_tokens: 100}
        tests:
          - vars: {language: French, input: Hello}
        """, **{"chat.json": '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "{{input}}"}]'})
    imported = import_promptfoo(path, "demo")
    systems = imported.eval_yaml["systems"]
    assert [s["name"] for s in systems] == [
        "openai:gpt-4o-mini@prompt-1", "openai:gpt-4o-mini@chat.json",
        "anthropic:messages:claude-3-5-haiku-latest@prompt-1", "anthropic:messages:claude-3-5-haiku-latest@chat.json"]
    openai, _, anthropic, anthropic_chat = systems
    assert openai["provider"] == "openai_chat"
    assert openai["endpoint"] == "${OPENAI_BASE_URL:-https://api.openai.com/v1}/chat/completions"
    assert openai["headers"] == {"Authorization": "Bearer ${OPENAI_API_KEY}"}  # the key's name, never the key
    assert openai["request_template"] == {"messages": [
        {"role": "user", "content": "Translate to {{ input.vars.language }}: {{ input.vars.input }}"}]}
    assert anthropic["provider"] == "anthropic_messages" and anthropic["temperature"] == 0 and anthropic["max_tokens"] == 100
    assert anthropic_chat["request_template"] == {"system": "Be brief.",
                                                  "messages": [{"role": "user", "content": "{{ input.vars.input }}"}]}
    assert imported.cases == [{"id": "test-1", "input": {"vars": {"language": "French", "input": "Hello"}}}]
    assert imported.report.findings == []


def test_http_provider_maps_url_body_and_a_field_path_transform(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['Q: {{q}}']
        providers:
          - id: https://example.com/api/chat
            config:
              method: POST
              headers: {Authorization: 'Bearer {{env.SERVICE_TOKEN}}', X-Api-Key: sk-literal-secret-123}
              body: {input: '{{prompt}}', user: '{{user}}'}
              transformResponse: json.choices[0].message.content
        tests: [{vars: {q: why, user: ann}}]
        """)
    imported = import_promptfoo(path, "demo")
    (system,) = imported.eval_yaml["systems"]
    assert system["endpoint"] == "https://example.com/api/chat"
    # A credential written in the config is never copied: eval.yaml names a variable instead.
    assert system["headers"] == {"Authorization": "Bearer ${SERVICE_TOKEN}", "X-Api-Key": "${PROMPTFOO_HEADER_X_API_KEY}"}
    write_tree(tmp_path / "out", imported.files())
    assert not any("sk-literal-secret-123" in p.read_text() for p in (tmp_path / "out").iterdir())
    assert system["request_template"] == {"input": "Q: {{ input.vars.q }}", "user": "{{ input.vars.user }}"}
    assert system["response_mapping"] == {"final_answer": "$.choices[0].message.content"}


def test_default_test_asserts_are_eval_level_unless_they_use_a_var(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['{{q}}']
        providers: [openai:gpt-4o-mini]
        defaultTest:
          vars: {lang: en}
          assert:
            - type: not-icontains
              value: as an AI
            - type: contains
              value: '{{expected}}'
        tests:
          - description: first
            vars: {q: hi, expected: hello}
            assert:
              - type: regex
                value: '^h'
                metric: starts_h
        """)
    imported = import_promptfoo(path, "demo")
    assert imported.eval_yaml["evaluators"] == [{"name": "default-1-not-icontains", "type": "contains_text", "config": {
        "all_of": [], "none_of": ["as an AI"], "case_sensitive": False}}]
    (case,) = imported.cases
    assert case["input"] == {"vars": {"lang": "en", "q": "hi", "expected": "hello"}}
    assert case["metadata"] == {"description": "first"}
    assert case["evaluators"] == [
        {"name": "default-2-contains", "type": "contains_text",
         "config": {"all_of": ["hello"], "none_of": [], "case_sensitive": True}},
        {"name": "assert-1-starts_h", "type": "promptfoo_assert",
         "config": {"assertion": "regex", "inverse": False, "value": "^h"}}]


def test_list_vars_make_one_case_per_combination(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['{{a}} {{b}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {a: [x, y], b: [1, 2], c: same}
        """)
    cases = import_promptfoo(path, "demo").cases
    assert [c["input"]["vars"] for c in cases] == [
        {"a": "x", "b": 1, "c": "same"}, {"a": "x", "b": 2, "c": "same"},
        {"a": "y", "b": 1, "c": "same"}, {"a": "y", "b": 2, "c": "same"}]


def test_csv_and_jsonl_tests_files_with_expected_columns(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['{{q}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - file://tests.csv
          - file://more/*.jsonl
        """, **{"tests.csv": 'q,__expected,__description,__metadata:topic\n'
                             'a,"icontains-any:x, y",first,t1\nb,plain text,second,t2\n',
                "more__extra.jsonl": '{"vars": {"q": "c"}, "assert": [{"type": "starts-with", "value": "c"}]}\n'})
    cases = import_promptfoo(path, "demo").cases
    assert [c["input"]["vars"]["q"] for c in cases] == ["a", "b", "c"]
    assert cases[0]["metadata"] == {"topic": "t1", "description": "first"}
    assert cases[0]["evaluators"][0]["config"] == {"all_of": [], "any_of": ["x", "y"], "none_of": [], "case_sensitive": False}
    assert cases[1]["evaluators"][0]["config"] == {"assertion": "equals", "inverse": False, "value": "plain text"}
    assert cases[2]["evaluators"][0]["type"] == "promptfoo_assert"


def test_csv_config_columns_set_the_threshold_of_their_assertion(tmp_path):
    # src/csv.ts (promptfoo 0.121.20, dist/src/index.js:11564-11600): `__expected` and `__expected1`
    # are the first assertion; the threshold also goes into the test's metadata.
    path = _config(tmp_path, """\
        prompts: ['{{q}}']
        providers: [openai:gpt-4o-mini]
        tests: file://tests.csv
        """, **{"tests.csv": "q,__expected1,__expected2,__config:__expected:threshold,__config:__expected2:threshold\n"
                             'a,levenshtein:abc,similar:a cat,2,0.6\n'})
    imported = import_promptfoo(path, "demo")
    (case,) = imported.cases
    assert [e["config"]["threshold"] for e in case["evaluators"]] == [2.0, 0.6]
    assert case["metadata"] == {"threshold": 0.6}
    assert imported.report.errors == []


def test_a_csv_config_column_promptfoo_rejects_is_bad_input(tmp_path):
    path = _config(tmp_path, "prompts: ['{{q}}']\nproviders: [openai:gpt-4o-mini]\ntests: file://tests.csv\n",
                   **{"tests.csv": "q,__expected,__config:__expected0:threshold\na,x,1\n"})
    with pytest.raises(BadSource, match=r"tests.csv:2 row 1: CSV column '__config:__expected0:threshold' with '1'"):
        import_promptfoo(path, "demo")


def test_an_assertion_ref_reads_the_config_assertion_templates(tmp_path):
    # promptfoo dereferences the config's `$ref`s before reading it (dist/src/index.js:13187-13225)
    path = _config(tmp_path, """\
        prompts: ['{{q}}']
        providers: [openai:gpt-4o-mini]
        assertionTemplates:
          pirate: {type: icontains, value: arrr}
        defaultTest:
          assert:
            - $ref: '#/assertionTemplates/pirate'
        tests:
          - vars: {q: a}
            assert:
              - $ref: '#/assertionTemplates/pirate'
                metric: Tone
        """)
    imported = import_promptfoo(path, "demo")
    assert imported.eval_yaml["evaluators"][0]["config"]["all_of"] == ["arrr"]
    assert imported.cases[0]["evaluators"][0]["name"] == "assert-1-Tone"
    assert imported.report.findings == []
    bad = _config(tmp_path / "bad", "prompts: [x]\nproviders: [openai:gpt-4o]\ntests:\n  - assert:\n"
                                    "      - $ref: '#/assertionTemplates/none'\n")
    with pytest.raises(BadSource, match=r"promptfooconfig.yaml:5 tests\[0\].assert\[0\]: \$ref '#/assertionTemplates/none' "
                                        "names nothing"):
        import_promptfoo(bad, "demo")


def test_derived_metrics_are_a_note_not_an_error(tmp_path):
    path = _config(tmp_path, "prompts: [x]\nproviders: [openai:gpt-4o]\nderivedMetrics:\n  - {name: D, value: A * 2}\n")
    (finding,) = import_promptfoo(path, "demo").report.findings
    assert finding.text().startswith("promptfooconfig.yaml:3: note: derivedMetrics: config key 'derivedMetrics' not mapped")


def test_openai_tools_make_the_script_and_assert_evaluators_read_the_tool_calls(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['Weather in {{city}}?']
        providers:
          - id: openai:chat:gpt-4o-mini
            config: {tools: file://tools.yaml}
        tests:
          - vars: {city: Boston}
            assert:
              - type: is-valid-openai-tools-call
              - type: contains
                value: get_current_weather
              - type: python
                value: output[0]['function']['name'] == 'get_current_weather'
              - type: llm-rubric
                value: calls the weather tool
        """, **{"tools.yaml": "- type: function\n  function: {name: get_current_weather, parameters: {type: object}}\n"})
    imported = import_promptfoo(path, "demo")
    tools = [{"type": "function", "function": {"name": "get_current_weather", "parameters": {"type": "object"}}}]
    assert imported.eval_yaml["systems"][0]["tools"] == tools  # the file's tools are sent
    valid, contains, script, _ = imported.cases[0]["evaluators"]
    assert valid["config"] == {"assertion": "is-valid-openai-tools-call", "inverse": False, "tools": tools,
                               "openai_tool_calls": True}
    # contains reads promptfoo's outputString (the calls' JSON), so promptfoo_assert, not contains_text
    assert contains["type"] == "promptfoo_assert" and contains["config"]["openai_tool_calls"] is True
    assert script["config"]["openai_tool_calls"] is True
    lines = [f.text() for f in imported.report.findings]
    assert "note: providers[0]: tools: when the model calls one, promptfoo's assertions see the tool calls" in lines[0]
    assert any("error: tests[0].assert[3]: llm-rubric reads the answer text here" in line for line in lines)


def test_a_json_schema_response_format_is_an_error_only_when_an_assertion_reads_the_output(tmp_path):
    config = """\
        prompts: [Q]
        providers:
          - id: openai:chat:gpt-4o-mini
            config: {response_format: {type: json_schema, json_schema: {name: x, schema: {type: object}}}}
          - id: openai:chat:gpt-4o
            config: {response_format: file://format.json}
        tests:
          - vars: {}
        """
    files = {"format.json": '{"type": "json_schema", "json_schema": {"name": "y", "schema": {"type": "object"}}}'}
    imported = import_promptfoo(_config(tmp_path / "a", config, **files), "demo")
    assert imported.eval_yaml["systems"][1]["response_format"]["json_schema"]["name"] == "y"
    # promptfoo parses only an inline json_schema (a file:// value is a string when it checks)
    (finding,) = imported.report.findings
    assert finding.text().startswith("promptfooconfig.yaml:3: note: providers[0]: response_format json_schema")
    judged = import_promptfoo(_config(tmp_path / "b", config + "    assert: [{type: is-json}]\n", **files), "demo")
    assert [f.severity for f in judged.report.findings] == ["error"]


def test_csv_and_jsonl_prompt_files_hold_one_prompt_a_row(tmp_path):
    # src/prompts/processors/csv.ts and jsonl.ts (graders-DC7jJ-Ea.js processCsvPrompts, processJsonlFile)
    path = _config(tmp_path, """\
        prompts: [file://prompts.csv, file://chats.jsonl, file://make.sh]
        providers: [echo]
        """, **{"prompts.csv": 'prompt,label\n"Tell me about {{topic}}","Basic"\n" Poem on {{topic}} ",\n',
                "chats.jsonl": '[{"role": "user", "content": "Hi {{topic}}"}]\n[{"role": "user", "content": "Yo"}]\n',
                "make.sh": "echo hi\n"})
    imported = import_promptfoo(path, "demo")
    assert [s["metadata"]["prompt"] for s in imported.eval_yaml["systems"]] == [
        "Basic", "Prompt 2 - Poem on {{topic}}",
        'chats.jsonl: [{"role": "user", "content": "Hi {{topic}}"}]', 'chats.jsonl: [{"role": "user", "content": "Yo"}]']
    (finding,) = imported.report.findings
    assert finding.text().startswith("promptfooconfig.yaml:1: error: prompts[2]: prompt script make.sh")


def test_a_test_providers_filter_runs_the_case_on_the_providers_it_keeps(tmp_path, monkeypatch):
    # promptfoo runs a test only on the providers its filter allows: isProviderAllowed /
    # doesProviderRefMatch (src/util/provider.ts; dist/src/util-BmRwZ8Aq.js:1325-1346): the
    # label or the id exactly, a `prefix*` of either, or either starting with `ref:`.
    path = _config(tmp_path, """\
        prompts: ['{{q}}', 'Q: {{q}}']
        providers:
          - {id: openai:gpt-4o-mini, label: fast}
          - {id: openai:gpt-4o, label: smart}
        tests:
          - vars: {q: all}
            providers: ['openai:*']
          - vars: {q: none}
            providers: [anthropic]
          - vars: {q: by label}
            providers: [fast]
          - vars: {q: by id}
            providers: ['openai:gpt-4o']
          - vars: {q: by wildcard}
            providers: ['sm*']
        """)
    imported = import_promptfoo(path, "demo")
    fast = [s["name"] for s in imported.eval_yaml["systems"] if s["name"].startswith("fast")]
    smart = [s["name"] for s in imported.eval_yaml["systems"] if s["name"].startswith("smart")]
    assert len(fast) == len(smart) == 2  # a variant per prompt
    assert [(c["input"]["vars"]["q"], c.get("variants")) for c in imported.cases] == [
        ("all", None), ("by label", fast), ("by id", smart), ("by wildcard", smart)]
    # Only the filter that keeps none is reported: a subset is mapped.
    (none,) = (f.text() for f in imported.report.findings)
    assert none.startswith("promptfooconfig.yaml:8: note: tests[1]: test providers ['anthropic'] match no imported")

    # The written eval loads: the case's variants are variants of the eval.
    write_tree(tmp_path / "out", imported.files())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    spec = load_eval(tmp_path / "out" / "eval.yaml")
    assert [c.variants for c in select_cases(spec, "r1")] == [None, fast, smart, smart]


def test_assertion_from_string_follows_promptfoos_csv_rules():
    # src/csv.ts assertionFromString (promptfoo 0.121.20, dist/src/index.js:11466-11517)
    assert assertion_from_string("grade:is polite") == {"type": "llm-rubric", "value": "is polite"}
    assert assertion_from_string("fn:output.length > 1") == {"type": "javascript", "value": "output.length > 1"}
    assert assertion_from_string("not-contains: bad") == {"type": "not-contains", "value": "bad"}
    assert assertion_from_string("levenshtein(3):kitten") == {"type": "levenshtein", "threshold": 3.0, "value": "kitten"}
    assert assertion_from_string("is-json") == {"type": "is-json"}
    assert assertion_from_string("levenshtein:kitten") == {"type": "levenshtein", "threshold": 0.75, "value": "kitten"}
    assert assertion_from_string("similar:a cat") == {"type": "similar", "threshold": 0.8, "value": "a cat"}
    assert assertion_from_string("just text: with a colon") == {"type": "equals", "value": "just text: with a colon"}


def test_every_unmapped_construct_has_a_file_line_in_the_report(tmp_path):
    path = _config(tmp_path, """\
        prompts:
          - 'Hi {{ name | upper }}'
          - 'Hello {{name}}'
        providers:
          - openai:gpt-4o-mini
          - vertex:gemini-pro
        tests:
          - vars: {name: Ann}
            threshold: 0.5
            assert:
              - type: moderation
              - type: contains
                value: Ann
                weight: 2
        """)
    imported = import_promptfoo(path, "demo")
    lines = [f.text() for f in imported.report.findings]
    assert lines[0].startswith("promptfooconfig.yaml:2: error: prompts[0]: prompt 'prompt-1': Nunjucks expression '{{ name | upper }}'")
    assert "promptfooconfig.yaml:6: error: providers[1]: provider 'vertex:gemini-pro' has no evalh counterpart here" in lines[1]
    assert lines[2].startswith("promptfooconfig.yaml:11: error: tests[0].assert[0]: moderation assertion has no evalh counterpart")
    assert [s["name"] for s in imported.eval_yaml["systems"]] == ["openai:gpt-4o-mini"]  # the one prompt left
    write_tree(tmp_path / "out", imported.files())
    report = (tmp_path / "out" / "import-report.md").read_text()
    assert all(f"- {line}" in report for line in lines)
    assert "3 error(s), 0 note(s)" in report


@pytest.mark.parametrize(("text", "files", "message"), [
    ("name: x\nsystems: []\n", {}, "promptfooconfig.yaml: not a promptfoo config (it has none of the keys prompts, providers, targets, tests)"),
    ("prompts: [file://missing.txt]\nproviders: [openai:gpt-4o]\n", {},
     "promptfooconfig.yaml:1 prompts[0]: file://missing.txt does not exist (missing.txt)"),
    ("prompts: [hi]\nproviders: [openai:gpt-4o]\ntests:\n  - assert:\n      - type: containz\n        value: x\n", {},
     "promptfooconfig.yaml:5 tests[0].assert[0]: unknown assertion type 'containz'"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, text, files, message):
    path = _config(tmp_path / "src", text, **files)
    with pytest.raises(BadSource) as raised:
        write_tree(tmp_path / "out", import_promptfoo(path, "demo").files())
    assert str(raised.value) == message
    assert not (tmp_path / "out").exists()


def test_writing_refuses_a_folder_with_files_and_leaves_no_staging(tmp_path):
    path = _config(tmp_path / "src", "prompts: [hi]\nproviders: [openai:gpt-4o]\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(BadSource, match="exists and is not empty"):
        write_tree(tmp_path / "out", import_promptfoo(path, "demo").files())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src"]
    write_tree(tmp_path / "new", import_promptfoo(path, "demo").files())
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["cases.yaml", "eval.yaml", "import-report.md"]
    assert yaml.safe_load((tmp_path / "new" / "cases.yaml").read_text())["cases"] == [{"id": "test-1", "input": {"vars": {}}}]


def test_a_var_using_another_var_is_rendered_as_promptfoo_renders_it(tmp_path):
    path = _config(tmp_path, """\
        prompts: ['Write a {{sentence}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {sentence: 'tweet about {{topic}}', topic: bananas}
        """)
    (case,) = import_promptfoo(path, "demo").cases
    assert case["input"]["vars"] == {"sentence": "tweet about bananas", "topic": "bananas"}


def test_a_python_provider_is_copied_and_called_as_promptfoo_calls_it(tmp_path, monkeypatch):
    import asyncio
    import json as json_module

    from evalh_pipeline.runner.evaluation import evaluate_traces
    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.runner.stages import prepare_cases
    from evalh_pipeline.runner.traces import produce_traces
    from evalh_pipeline.store.run_dir import new_run_id

    path = _config(tmp_path / "src", """\
        prompts: ['Shout {{word}}']
        providers:
          - id: file://shouter.py:shout
            config: {suffix: '!'}
        tests:
          - vars: {word: hello}
            assert: [{type: equals, value: SHOUT HELLO!}]
          - vars: {word: bye}
            assert: [{type: equals, value: nope}]
        """, **{"shouter.py": """\
        async def shout(prompt, options, context):
            assert context["vars"]["word"] in prompt
            return {"output": prompt.upper() + options["config"]["suffix"], "tokenUsage": {"prompt": 2, "completion": 3}}
        """})
    imported = import_promptfoo(path, "shout")
    assert imported.report.findings == []
    write_tree(tmp_path / "out", imported.files())
    assert (tmp_path / "out" / "promptfoo_provider_shouter.py").exists()
    monkeypatch.chdir(tmp_path / "out")
    spec = load_eval(tmp_path / "out" / "eval.yaml")
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    traces = {t["case_id"]: t for t in map(json_module.loads, info.run_dir.traces.read_text().splitlines())}
    assert traces["test-1"]["output"]["final_answer"] == "SHOUT HELLO!"
    assert traces["test-1"]["metrics"]["token_output"] == 3
    results = {r["case_id"]: r["passed"] for r in map(json_module.loads, info.run_dir.results.read_text().splitlines())}
    assert results == {"test-1": True, "test-2": False}


def test_a_javascript_provider_is_an_error_line_saying_what_to_do(tmp_path):
    (tmp_path / "provider.js").write_text("module.exports = class { id() { return 'x'; } };\n")
    path = _config(tmp_path, """\
        prompts: ['Hello {{name}}']
        providers:
          - openai:gpt-4o-mini
          - file://provider.js
        tests:
          - vars: {name: Ann}
        """)
    imported = import_promptfoo(path, "demo")
    assert [f.text() for f in imported.report.findings] == [
        "promptfooconfig.yaml:4: error: providers[1]: provider 'file://provider.js' is a JavaScript provider, which "
        "evalh does not run; provider left out (its variants are not imported): wrap its call in a Python provider "
        "(file://provider.py) or an http provider to import it"]
