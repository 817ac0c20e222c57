"""promptfoo's own examples (tests/importers/promptfoo/examples, MIT) import with the report
they should have, and `evalh run --dry-run` accepts each imported eval.

The full figure over a larger set comes from `python -m tests.support.import_promptfoo_examples DIR`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalh_pipeline.importers.promptfoo import import_promptfoo
from evalh_pipeline.importers.writing import write_tree
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).parent / "examples"
CLEAN = ["csv-metadata", "eval-self-grading", "getting-started", "gpt-3.5-vs-4", "http-provider"]


@pytest.mark.parametrize("name", CLEAN)
def test_example_imports_with_no_error_and_dry_runs(name, tmp_path, env):
    if name == "eval-self-grading" and shutil.which("node") is None:
        pytest.skip("its javascript assertion needs Node.js (node on PATH)")
    imported = import_promptfoo(EXAMPLES / name / "promptfooconfig.yaml", name)
    assert imported.report.errors == []
    # Dagster names the eval's assets after it: letters, digits and `_` only.
    assert imported.eval_yaml["eval"]["name"] == name.replace("-", "_").replace(".", "_")
    write_tree(tmp_path / name, imported.files())
    dry = run_evalh(["run", str(tmp_path / name / "eval.yaml"), "--dry-run"],
                    {**env, "OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-test"}, tmp_path)
    assert dry.returncode == 0, dry.stderr


def test_simple_csv_reports_its_nunjucks_prompt_and_keeps_the_other(tmp_path):
    imported = import_promptfoo(EXAMPLES / "simple-csv" / "promptfooconfig.yaml", "simple-csv")
    (error,) = imported.report.errors
    assert error.text().startswith("promptfooconfig.yaml:3: error: prompts[0]: prompt 'prompts.txt:1': "
                                   "Nunjucks expression '{{ (style_config | load).tone }}'")
    assert [s["metadata"]["prompt"] for s in imported.eval_yaml["systems"]] == ["prompts.txt:2"]
    assert [c["evaluators"][0]["config"]["all_of"] for c in imported.cases] == [["bonjour"], ["faim"], ["Ahoy"], ["grub"]]
