"""Issue 11, item 19: a canonical output that does not outlive the process.

``output: memory://…`` printed "published to memory://…" and the run was gone when
``evalh`` exited. The first output is where runs live: a non-persistent one is refused.
"""

from __future__ import annotations

import json

import pytest

from tests.adversarial.leaks import error_text
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("args", [["run", "--dry-run", "eval.yaml"], ["run", "eval.yaml"]], ids=["dry-run", "run"])
def test_a_memory_url_canonical_output_is_refused(tmp_path, env, args):
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (tmp_path / "eval.yaml").write_text(
        "eval: {name: vanishing}\ndataset: {type: jsonl, path: cases.jsonl}\n"
        "systems:\n  - {name: a, adapter: python_function, target: agent:run}\n"
        "output:\n  - {type: local_files, path: 'memory://bucket/runs'}\n")
    env = {**env, "EVALH_CACHE_DIR": str(tmp_path / "cache")}

    proc = run_evalh(args, env, tmp_path)

    assert proc.returncode == 1, proc.stderr
    assert "published to" not in proc.stdout
    message = error_text(proc.stderr)
    assert message.startswith("eval.yaml:6 output[0].path: 'memory://bucket/runs': memory:// keeps runs in this "
                              "process's memory, gone when it exits"), message
    assert not (tmp_path / "cache").exists() and not (tmp_path / "runs").exists()
