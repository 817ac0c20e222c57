"""Issue 11, item 13: a python_function whose exception message quotes a known secret.

``error.message`` and ``error.stack`` of the trace were stored in clear, for a key from
``${VAR}`` in the system's config as for a credential the function read from the host.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.adversarial.leaks import files_containing
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

CONFIG_SECRET = "sk-live-a1b2c3d4e5f6"   # ${SVC_API_KEY} in the variant's config
HOST_SECRET = "ghp-host-9e8d7c6b5a"     # read by the function from the host's GITHUB_TOKEN

AGENT = """
import os

def run(case, variant):
    key = variant["config"]["api_key"]
    raise PermissionError(f"upstream refused key {key} (fallback {os.environ['GITHUB_TOKEN']})")
"""


def test_an_exception_quoting_a_secret_is_stored_masked(tmp_path, env):
    folder = tmp_path / "ev"
    folder.mkdir()
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {"q": i}}) + "\n" for i in range(2)))
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: py_leak}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - name: py
            adapter: python_function
            target: agent:run
            api_key: "${{SVC_API_KEY}}"
        evaluators:
          - {{name: answered, type: contains_text, config: {{all_of: [x]}}}}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))
    env = {**env, "SVC_API_KEY": CONFIG_SECRET, "GITHUB_TOKEN": HOST_SECRET, "EVALH_CACHE_DIR": str(tmp_path / "cache")}

    proc = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)

    (run_dir,) = (tmp_path / "runs").iterdir()
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 2, proc.stderr
    for trace in traces:
        assert trace["error"]["type"] == "exception"
        assert trace["error"]["message"] == "PermissionError: upstream refused key ***MASKED*** (fallback ***MASKED***)"
        assert "PermissionError" in trace["error"]["stack"] and "***MASKED***" in trace["error"]["stack"]
    for secret in (CONFIG_SECRET, HOST_SECRET):
        assert secret not in proc.stdout and secret not in proc.stderr
        assert files_containing([tmp_path / "runs", tmp_path / "dagster_home"], secret) == []
