"""Every adapter's answer goes through one check before it becomes a trace: an http server
reporting impossible token counts errors its cell with the same line a python function
reporting them gets, and the run completes.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.support.evalh_process import run_evalh
from tests.sandbox.support import records
from tests.support.http_server import serving_http

pytestmark = pytest.mark.integration

USAGE = {"prompt_tokens": -5, "completion_tokens": 1152921504606846976}
MESSAGE = ("system returned a malformed response: metrics.token_input: Input should be greater than or equal "
           "to 0 (got -5); metrics.token_output: Input should be less than or equal to 9007199254740992 "
           "(got 1152921504606846976)")


def _answer(head: str) -> bytes:
    body = json.dumps({"answer": "Paris", "usage": USAGE}).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


def _eval(folder, url):
    folder.mkdir()
    (folder / "agent.py").write_text(textwrap.dedent(f"""
        def run(case, variant):
            return {{"final_answer": "Paris", "metrics": {{"token_input": {USAGE["prompt_tokens"]},
                                                         "token_output": {USAGE["completion_tokens"]}}}}}
    """))
    (folder / "cases.jsonl").write_text(json.dumps({"id": "one", "input": {"q": "capital of France?"}}) + "\n")
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""
        eval: {{name: usage}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - name: server
            adapter: http
            endpoint: {url}/v1
            response_mapping:
              final_answer: $.answer
              tokens.input: $.usage.prompt_tokens
              tokens.output: $.usage.completion_tokens
          - name: function
            adapter: python_function
            target: agent:run
        evaluators:
          - {{name: paris, type: contains_text, config: {{all_of: [Paris]}}}}
        output:
          - {{type: local_files, path: {folder / "runs"}}}
    """))
    return folder / "eval.yaml"


def test_impossible_token_counts_from_an_http_server_error_the_cell_as_from_a_python_function(tmp_path, env):
    with serving_http(_answer) as url:
        path = _eval(tmp_path / "usage", url)
        done = run_evalh(["run", str(path)], env, path.parent, timeout=300)
    (run_dir,) = (path.parent / "runs").iterdir()
    traces = {t["variant_name"]: t for t in records(run_dir, "traces.jsonl")}
    assert set(traces) == {"server", "function"}, done.stdout[-2000:] + done.stderr[-2000:]
    for trace in traces.values():
        assert trace["error"]["type"] == "adapter_error"
        assert trace["error"]["message"] == MESSAGE
        assert trace["metrics"]["token_input"] is None and trace["metrics"]["token_output"] is None
    # No system gave an answer the run could keep: the run fails after its traces, the cause first.
    assert done.returncode == 2 and "no system answered" in done.stderr, done.stderr[-2000:]
    assert not (run_dir / "summary.yaml").exists()
