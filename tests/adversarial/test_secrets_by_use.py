"""Issue 11, item 12: a secret in a variable not named like one, sent in a header or the
endpoint's query, to a server that echoes its request.

The config snapshot masked the Authorization header, but the traces (and the results
quoting the answer) stored the echoed values in clear: a value is a secret by its use.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.adversarial.leaks import echo_server, files_containing
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

BEARER = "bearer-7Qk2fP9xLm3"   # ${LLM_BEARER}: in the Authorization header
TENANT = "tenant-0a9f33c1"      # ${TENANT_REF}: in another header
QUERY = "q-sig-5d1e8b7a"        # ${LLM_SIG}: in the endpoint's query string
PARAM = "caller-66e1b2d4"       # ${CALLER_REF}: in query_params


def test_values_substituted_into_headers_and_queries_are_masked_in_every_record(tmp_path, env):
    folder = tmp_path / "ev"
    folder.mkdir()
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {"q": i}}) + "\n" for i in range(2)))
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: echo_leak}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - name: in_query
            adapter: http
            endpoint: "${{ECHO_URL}}/chat?s=${{LLM_SIG}}"
            headers:
              Authorization: "Bearer ${{LLM_BEARER}}"
              X-Tenant: "${{TENANT_REF}}"
          - name: in_params
            adapter: http
            endpoint: "${{ECHO_URL}}/chat"
            query_params: {{ref: "${{CALLER_REF}}"}}
        evaluators:
          - {{name: echoed, type: contains_text, config: {{all_of: [never in the answer]}}}}
        output: {{type: local_files, path: {tmp_path / "runs"}}}
        """))
    with echo_server() as url:
        env = {**env, "ECHO_URL": url, "LLM_BEARER": BEARER, "TENANT_REF": TENANT, "LLM_SIG": QUERY,
               "CALLER_REF": PARAM, "EVALH_CACHE_DIR": str(tmp_path / "cache")}
        proc = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)

    (run_dir,) = (tmp_path / "runs").iterdir()
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    # The server did echo the request: the answers quote the masked headers and query.
    assert len(traces) == 4 and all(t["error"] is None for t in traces), proc.stderr
    answers = {t["variant_name"]: t["output"]["final_answer"] for t in traces}
    assert "Bearer ***MASKED***" in answers["in_query"] and "s=***MASKED***" in answers["in_query"]
    assert "ref=***MASKED***" in answers["in_params"]
    # The endpoint's host and port are not secrets: the snapshot keeps them readable.
    assert url.split("//")[1] in (run_dir / "config.yaml").read_text()
    for secret in (BEARER, TENANT, QUERY, PARAM):
        assert secret not in proc.stdout and secret not in proc.stderr
        assert files_containing([tmp_path / "runs", tmp_path / "dagster_home"], secret) == []
