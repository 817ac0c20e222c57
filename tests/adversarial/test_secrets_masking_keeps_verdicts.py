"""Issue 25, item 6: over-masking changed verdicts. With ``endpoint: ${AGENT_URL}`` (a
variable not named like a secret) the URL's path became a "secret by use": an answer
quoting ``/v1/chat/completions`` was recorded and judged as ``***MASKED***``, and a correct
variant scored 0 %.

Credentials are masked, not everything that came from the environment: the token in the
same URL's query is still masked everywhere, the path is not. A real HTTP server on
loopback that quotes the request it got, as a careless API does.
"""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml

from tests.adversarial.leaks import echo_server, files_containing
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.e2e

TOKEN = "tok-3b9d0c2e7f41"  # in ${AGENT_URL}'s query


def test_an_answer_quoting_the_endpoint_path_passes_and_the_query_token_stays_masked(tmp_path, env):
    folder = tmp_path / "ev"
    folder.mkdir()
    (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {"q": "where did you send it?"}}) + "\n")
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: path_not_secret}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - {{name: agent, adapter: http, endpoint: "${{AGENT_URL}}"}}
        evaluators:
          - {{name: quotes_path, type: contains_text, config: {{all_of: [/v1/chat/completions]}}}}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))
    with echo_server() as url:
        env = {**env, "AGENT_URL": f"{url}/v1/chat/completions?token={TOKEN}",
               "EVALH_CACHE_DIR": str(tmp_path / "cache")}
        proc = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    (trace,) = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert trace["error"] is None
    assert "/v1/chat/completions?token=***MASKED***" in trace["output"]["final_answer"]
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    assert [v["cases_passed"] for v in summary["variants"]] == [1]
    assert "/v1/chat/completions" in (run_dir / "config.yaml").read_text()
    assert TOKEN not in proc.stdout and TOKEN not in proc.stderr
    assert files_containing([tmp_path / "runs", tmp_path / "dagster_home"], TOKEN) == []
