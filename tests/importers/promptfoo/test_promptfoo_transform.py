"""promptfoo's `transform`: a test's (or defaultTest's) `options.transform` rewrites the output
every assertion of the test sees, an assertion's own `transform` the output that assertion sees,
after the test's (runAssertionInternal in promptfoo's src/assertions/index.ts; the test's in
src/evaluator.ts). Inline code is a one-line expression over `output` and `context`, or a
`file://x.js[:fn]` function (src/util/transform.ts)."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from evalh_pipeline.importers.promptfoo import import_promptfoo
from tests.support.openai_chat_server import echo_chat_server
from tests.support.promptfoo_parity import (
    case_verdicts,
    promptfoo_verdicts,
    required_promptfoo,
    run_imported_results,
    write_tests_config,
)

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="transforms are JavaScript: they need Node.js")

# (test, reply, promptfoo's verdict, why)
ROWS = [
    ({"options": {"transform": "output.toUpperCase()"}, "assert": [{"type": "contains", "value": "PARIS"}]},
     "paris", True, "the test's transform runs before every assertion"),
    ({"options": {"transform": "output.toLowerCase()"}, "assert": [{"type": "contains", "value": "PARIS"}]},
     "PARIS", False, "the assertion sees the lower-cased output"),
    ({"assert": [{"type": "equals", "value": "5", "transform": "String(output.length)"},
                 {"type": "contains", "value": "Paris"}]},
     "Paris", True, "an assertion's transform is its own: the next assertion sees the model's output"),
    ({"options": {"transform": "output.toUpperCase()"},
      "assert": [{"type": "equals", "value": "PARIS", "transform": "output.split(',')[0]"}]},
     "paris,lyon", True, "the assertion's transform runs on the test's transformed output"),
    ({"vars": {"n": 3}, "assert": [{"type": "equals", "value": "Par", "transform": "file://transform.js:first"}]},
     "Paris", True, "a file's named function, called with output and context (context.vars)"),
    ({"threshold": 0.5, "options": {"transform": "output.trim().toLowerCase()"},
      "assert": [{"type": "equals", "value": "paris"}, {"type": "equals", "value": "lyon"}]},
     "Paris", True, "a threshold over transformed output: (1 + 0) / 2 >= 0.5"),
]
DEFAULT_ROWS = [
    ({"assert": [{"type": "contains", "value": "paris"}]}, "PARIS", True, "defaultTest's transform"),
    ({"options": {"transform": "output"}, "assert": [{"type": "contains", "value": "paris"}]}, "PARIS", False,
     "a test's own transform replaces defaultTest's (promptfoo merges options, the test's win)"),
]
ROW_SETS = pytest.mark.parametrize(("rows", "default"), [
    (ROWS, None), (DEFAULT_ROWS, {"options": {"transform": "output.toLowerCase()"}})], ids=["tests", "default-test"])


def _config(folder, base_url, rows, default):
    tests = [{**test, "vars": {"reply": reply, **test.get("vars", {})}} for test, reply, _, _ in rows]
    path = write_tests_config(folder, base_url, tests, default)
    (folder / "transform.js").write_text("module.exports.first = (output, context) => output.slice(0, context.vars.n);\n")
    return path


@pytest.mark.integration
@needs_node
@ROW_SETS
def test_transform_verdicts_follow_promptfoos_rule_against_a_loopback_model(tmp_path, monkeypatch, rows, default):
    with echo_chat_server() as base_url:
        path = _config(tmp_path / "pf", base_url, rows, default)
        ours = case_verdicts(run_imported_results(path, tmp_path / "evalh", monkeypatch), len(rows))
    assert ours == [want for _, _, want, _ in rows]


@pytest.mark.integration
@needs_node
@ROW_SETS
def test_promptfoo_itself_gives_the_same_transform_verdicts(tmp_path, monkeypatch, rows, default):
    command = required_promptfoo()
    with echo_chat_server() as base_url:
        path = _config(tmp_path / "pf", base_url, rows, default)
        theirs = promptfoo_verdicts(command, path, base_url, tmp_path)
        ours = case_verdicts(run_imported_results(path, tmp_path / "evalh", monkeypatch), len(rows))
    assert theirs == ours == [want for _, _, want, _ in rows]


@needs_node
def test_transforms_map_onto_evaluator_sets(tmp_path):
    (tmp_path / "t.py").write_text("def get_transform(output, context):\n    return output\n")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(textwrap.dedent("""\
        prompts: ['Q: {{q}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {q: a}
            options: {transform: output.trim()}
            assert:
              - {type: contains, value: a, transform: 'file://t.py'}
        """))
    imported = import_promptfoo(path, "demo")
    assert imported.report.findings == []
    [outer] = imported.cases[0]["evaluators"]
    assert outer["name"] == "assert-transform" and outer["config"]["transform"] == {
        "language": "javascript", "code": "output.trim()"}
    [inner] = outer["config"]["evaluators"]
    assert inner["type"] == "evaluator_set" and inner["config"]["transform"] == {
        "language": "python", "source": "def get_transform(output, context):\n    return output\n", "name": "t.py"}


def test_without_node_an_inline_transform_is_an_error_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text("prompts: ['Q: {{q}}']\nproviders: [openai:gpt-4o-mini]\ntests:\n"
                    "  - vars: {q: a}\n    assert:\n      - {type: contains, value: a, transform: output.trim()}\n")
    imported = import_promptfoo(path, "demo")
    assert [f.text() for f in imported.report.findings] == [
        "promptfooconfig.yaml:6: error: tests[0].assert[0]: assertion transform is JavaScript and needs Node.js, "
        "which is not installed here; not used: install Node and import again to judge as promptfoo does"]
