"""`evalh import promptfoo` as users run it: the report on the terminal and beside the eval,
--strict, bad input, and the imported eval accepted by `evalh run --dry-run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.evalh_process import run_evalh

from tests.support.paths import REPO

pytestmark = pytest.mark.integration

CONFIG = """\
description: translations
prompts: ['Translate to {{language}}: {{input}}']
providers: [openai:gpt-4o-mini]
tests:
  - vars: {language: French, input: Hello}
    assert:
      - type: icontains
        value: bonjour
      - type: moderation
"""


def test_import_writes_the_eval_and_its_report_and_dry_run_accepts_it(tmp_path, env):
    (tmp_path / "promptfooconfig.yaml").write_text(CONFIG)
    ran = run_evalh(["import", "promptfoo", "promptfooconfig.yaml", "-o", "imported"], env, tmp_path)
    assert ran.returncode == 0, ran.stderr
    finding = "promptfooconfig.yaml:9: error: tests[0].assert[1]: moderation assertion has no evalh counterpart yet; assertion left out"
    assert finding in ran.stderr
    assert f"- {finding}" in (tmp_path / "imported" / "import-report.md").read_text()
    assert "1 variant(s) (prompts x providers), 1 case(s)" in ran.stdout
    dry = run_evalh(["run", "imported/eval.yaml", "--dry-run"], {**env, "OPENAI_API_KEY": "sk-test"}, tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "cases: 1\n" in dry.stdout


def test_strict_makes_an_unmapped_construct_an_error_and_writes_nothing(tmp_path, env):
    (tmp_path / "promptfooconfig.yaml").write_text(CONFIG)
    ran = run_evalh(["import", "promptfoo", "promptfooconfig.yaml", "-o", "imported", "--strict"], env, tmp_path)
    assert ran.returncode == 1
    assert "promptfooconfig.yaml: 1 construct(s) do not map (--strict); nothing written" in ran.stderr
    assert not (tmp_path / "imported").exists()


def test_a_file_that_is_not_a_promptfoo_config_is_one_line(tmp_path, env):
    (tmp_path / "eval.yaml").write_text("schema_version: '1.0'\neval: {name: x}\n")
    ran = run_evalh(["import", "promptfoo", "eval.yaml", "-o", "imported"], env, tmp_path)
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines() == [
        "error: eval.yaml: not a promptfoo config (it has none of the keys prompts, providers, targets, tests)"]
    assert not (tmp_path / "imported").exists()


def test_results_become_a_baseline_that_drift_and_compare_use(tmp_path, env):
    """promptfoo's results.json (tests/importers/promptfoo/results, written by promptfoo 0.121.20
    against the echo model) replays as a run; promoted, the next run drifts and compares against it."""
    from tests.support.openai_chat_server import echo_chat_server

    fixture = REPO / "tests" / "importers" / "promptfoo" / "results"
    env = {**env, "OPENAI_API_KEY": "sk-test"}
    with echo_chat_server() as base_url:
        config = tmp_path / "promptfooconfig.yaml"
        config.write_text((fixture / "promptfooconfig.yaml").read_text().replace("${ECHO_BASE_URL}", base_url))
        ran = run_evalh(["import", "promptfoo", str(config), "-o", "capitals", "--results",
                         str(fixture / "results.json")], env, tmp_path)
        assert ran.returncode == 0, ran.stderr
        assert "3 of promptfoo's outputs in promptfoo-baseline.yaml (replayable baseline)" in ran.stdout
        baseline = run_evalh(["run", "capitals/promptfoo-baseline.yaml"], env, tmp_path)
        assert baseline.returncode == 0, baseline.stderr
        (baseline_run,) = [Path(line.split(": ", 1)[1]) for line in baseline.stdout.splitlines()
                           if line.startswith("run directory: ")]
        traces = [json.loads(line) for line in (baseline_run / "traces.jsonl").read_text().splitlines()]
        # promptfoo's own outputs and latencies, replayed
        assert sorted(t["output"]["final_answer"] for t in traces) == ["Lyon", "Paris", "Rome is the capital"]
        assert all(t["extra"]["source"] == "replay" for t in traces)
        assert run_evalh(["promote", str(baseline_run)], env, tmp_path).returncode == 0
        fresh = run_evalh(["run", "capitals/eval.yaml"], env, tmp_path)
        assert fresh.returncode == 0, fresh.stderr
        assert f"drift vs promoted baseline {baseline_run.name}: 0 regression(s), 0 improvement(s)" in fresh.stdout
    (fresh_run,) = [Path(line.split(": ", 1)[1]) for line in fresh.stdout.splitlines()
                    if line.startswith("run directory: ")]
    compared = run_evalh(["compare", str(baseline_run), str(fresh_run)], env, tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert "openai:chat:gpt-4o-mini    66.7% → 66.7%" in compared.stdout
    assert "p = 1: no case changed" in compared.stdout
