"""Each promptfoo assertion type, imported and run against a loopback echo model, gives the
verdict promptfoo's own source decides (the rows and their citations: tests/support/promptfoo_parity.py)."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from evalh_pipeline.importers.promptfoo import import_promptfoo
from evalh_pipeline.importers.writing import write_tree
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.openai_chat_server import echo_chat_server
from tests.support.promptfoo_parity import ROWS, write_config

pytestmark = pytest.mark.integration


def run_imported(config, out, monkeypatch) -> dict[str, dict]:
    """Import ``config`` into ``out``, run it in-process; the result of each case's own evaluator."""
    imported = import_promptfoo(config, "parity")
    assert imported.report.findings == []
    write_tree(out, imported.files())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    spec = load_eval(out / "eval.yaml")
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    results = [json.loads(line) for line in info.run_dir.results.read_text().splitlines()]
    return {r["case_id"]: r for r in results if r["evaluator"].startswith("assert-")}


def test_every_assertion_type_gives_promptfoos_verdict(tmp_path, monkeypatch):
    if shutil.which("node") is None:
        pytest.skip("the javascript rows need Node.js (node on PATH); the image has it (Debian nodejs)")
    with echo_chat_server() as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)  # where `similar` embeds, as promptfoo's grader
        results = run_imported(write_config(tmp_path / "pf", base_url), tmp_path / "evalh", monkeypatch)
    verdicts = {f"test-{i + 1}": (a["type"], reply, results[f"test-{i + 1}"]["passed"], results[f"test-{i + 1}"].get("error"))
                for i, (a, reply, _, _) in enumerate(ROWS)}
    expected = {f"test-{i + 1}": (a["type"], reply, want, None) for i, (a, reply, want, _) in enumerate(ROWS)}
    assert verdicts == expected
