"""Issue 11, item 11: a cli tool that logs its argv and environment to stderr, then fails.

The cell's ``extra.stderr`` and the ``adapter_error`` message quoting it used to be
stored as they were: every value passed on the command line or in ``env`` (and, with
``inherit_env``, the host's credentials) reached traces.jsonl in clear.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tests.adversarial.leaks import files_containing
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

ARG_SECRET = "sig-4f9a1c77e2d0"      # passed as a plain argument; the variable is not named like a secret
ENV_SECRET = "login-9b2e55aa10c3"    # passed in the tool's env under a plain name
HOST_SECRET = "tok-host-81c0ffee7d"  # only in the host environment, inherited by the second variant

TOOL = """
import json, os, sys
print("partial answer before the crash", flush=True)
sys.stderr.write("argv=" + json.dumps(sys.argv) + "\\n")
sys.stderr.write("env=" + json.dumps(dict(os.environ)) + "\\n")
sys.exit(3)
"""


def test_a_failing_cli_tool_that_logs_argv_and_env_leaks_nothing(tmp_path, env):
    folder = tmp_path / "ev"
    folder.mkdir()
    (folder / "tool.py").write_text(TOOL)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {"q": i}}) + "\n" for i in range(2)))
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: cli_leak}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - name: own_env
            adapter: cli
            command: [{json.dumps(sys.executable)}, tool.py, --sig, "${{TOOL_SIG}}"]
            env: {{SERVICE_LOGIN: "${{SERVICE_LOGIN}}"}}
          - name: inherited_env
            adapter: cli
            command: [{json.dumps(sys.executable)}, tool.py]
            inherit_env: true
        evaluators:
          - {{name: answered, type: contains_text, config: {{all_of: [partial]}}}}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))
    env = {**env, "TOOL_SIG": ARG_SECRET, "SERVICE_LOGIN": ENV_SECRET, "ADV_SERVICE_TOKEN": HOST_SECRET,
           "EVALH_CACHE_DIR": str(tmp_path / "cache")}

    proc = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)

    (run_dir,) = (tmp_path / "runs").iterdir()
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    # The attempt happened: every cell failed with the tool's stderr recorded.
    assert len(traces) == 4 and all(t["error"]["type"] == "adapter_error" for t in traces), proc.stderr
    assert all("argv=" in t["extra"]["stderr"] and "stderr (tail)" in t["error"]["message"] for t in traces)
    assert all("***MASKED***" in t["extra"]["stderr"] for t in traces)
    for secret in (ARG_SECRET, ENV_SECRET, HOST_SECRET):
        assert secret not in proc.stdout and secret not in proc.stderr
        assert files_containing([tmp_path / "runs", tmp_path / "dagster_home"], secret) == []
