"""Issue 11, item 14: a config error must not echo the value a ``${VAR}`` expanded to.

``systems[0].method: got 'sk-…'`` and an invalid regular expression quoting its pattern
printed values that came from the environment; the error names the variable instead.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

SYSTEM = """\
  - name: api
    adapter: http
    endpoint: https://api.example.com/v1/chat
"""

CASES = [
    # (what is wrong, the variable, its value, where the error points)
    pytest.param(SYSTEM + '    method: "${LLM_METHOD}"\n', "", "LLM_METHOD", "sk-live-3f8a9d2c1b",
                 "eval.yaml:7 systems[0].method", id="a key pasted into a plain variable"),
    pytest.param(SYSTEM, 'evaluators:\n  - {name: shape, type: regex_match, config: {pattern: "${ANSWER_PATTERN}"}}\n',
                 "ANSWER_PATTERN", "acct-(5521-secret", "eval.yaml:8 evaluators[0].config.pattern",
                 id="an invalid regular expression"),
    pytest.param(SYSTEM, 'run: {baseline_variant: "${OPENAI_API_KEY}"}\n', "OPENAI_API_KEY", "sk-proj-77aa88bb99",
                 "eval.yaml:7 run.baseline_variant", id="a secret in a wrong place"),
]


@pytest.mark.parametrize(("systems", "extra", "variable", "value", "where"), CASES)
def test_config_errors_name_the_variable_never_its_value(tmp_path, env, systems, extra, variable, value, where):
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {"q": 1}}) + "\n")
    (tmp_path / "eval.yaml").write_text(textwrap.dedent("""\
        eval: {name: config_leak}
        dataset: {type: jsonl, path: cases.jsonl}
        systems:
        """) + systems + extra)

    for args in (["run", "--dry-run", "eval.yaml"], ["run", "eval.yaml"]):
        proc = run_evalh(args, {**env, variable: value}, tmp_path)
        assert proc.returncode == 1, proc.stderr
        output = proc.stdout + proc.stderr
        assert "Traceback" not in output
        # The problem is still reported, at its line, naming the variable.
        assert where in output and f"${{{variable}}}" in output, output
        assert value.lower() not in output.lower()  # in no spelling: a validator may change its case
