"""`evalh import promptfoo` as users run it: the report on the terminal and beside the eval,
--strict, bad input, and the imported eval accepted by `evalh run --dry-run`."""

from __future__ import annotations

import pytest

from tests.conftest import run_evalh

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
