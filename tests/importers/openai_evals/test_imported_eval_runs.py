"""An imported registry eval runs with no edits: `evalh import openai-evals` then `evalh run`,
as processes, against a local OpenAI-compatible server; the key reaches no file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.evalh_process import run_evalh
from tests.importers.openai_evals.support import REGISTRY, SCRIPT
from tests.support.scripted_chat_server import ScriptedChatServer

pytestmark = pytest.mark.e2e
KEY = "sk-imported-run-key-0123456789"


def test_an_imported_eval_runs_through_the_cli_with_openai_evals_verdicts(tmp_path: Path, env):
    out = tmp_path / "includes"
    proc = run_evalh(["import", "openai-evals", str(REGISTRY / "evals" / "parity.yaml"), "-o", str(out),
                      "--eval", "parity-includes"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    with ScriptedChatServer({prompt: answer for prompt, answer, _ in SCRIPT}) as server:
        proc = run_evalh(["run", str(out / "eval.yaml")],
                         {**env, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]  # ./runs: the default output
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    # Includes' verdicts (test_verdict_parity.py's second column): 5 of the 14 samples pass.
    assert [(v["name"], v["cases_total"], v["cases_passed"]) for v in summary["variants"]] == [("gpt-4o-mini", 14, 5)]
    assert KEY not in proc.stdout + proc.stderr
    assert [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()] == []
