"""promptfoo's own examples (tests/importers/promptfoo/examples, MIT) import with the report
they should have, and `evalh run --dry-run` accepts each imported eval.

The same figure over any folder of examples comes from
`python -m tests.support.import_promptfoo_examples DIR`.
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
# The examples that use only what `evalh import promptfoo` maps (issue 37): each imports with no
# error in its report. Those with a javascript assertion need Node.js to be judged as promptfoo does.
CLEAN = [
    "assistant-cli/promptfooconfig.yaml", "compare-gpt-temperature/promptfooconfig.yaml",
    "compare-openai-models/promptfooconfig.yaml", "config-csv-metadata/promptfooconfig.yaml",
    "config-multiple-translations/promptfooconfig.yaml", "config-vars-referencing-vars/promptfooconfig.yaml",
    "csv-metadata/promptfooconfig.yaml", "csv-prompts/promptfooconfig.yaml", "eval-self-grading/promptfooconfig.yaml",
    "eval-summarization/promptfooconfig.yaml", "getting-started/promptfooconfig.yaml", "gpt-3.5-vs-4/promptfooconfig.yaml",
    "gpt-4o-vs-4o-mini/promptfooconfig.yaml", "http-provider/promptfooconfig.yaml", "named-metrics/promptfooconfig.yaml",
    "openai-structured-output/promptfooconfig.chat.yaml", "openai-tools-call/promptfooconfig.yaml",
    "prompts-per-model/promptfooconfig.yaml", "simple-cli/promptfooconfig.yaml", "simple-test/promptfooconfig.yaml",
]
NEEDS_NODE = {"eval-self-grading", "eval-summarization", "named-metrics", "openai-tools-call", "simple-test"}


def _folder(config: str) -> str:
    return config.split("/")[0]


def test_every_vendored_example_that_maps_is_listed_and_there_are_at_least_twenty():
    if shutil.which("node") is None:
        pytest.skip(f"{len(NEEDS_NODE)} examples have javascript assertions, which need Node.js (node on PATH)")
    configs = sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("promptfooconfig*.yaml"))
    clean = [c for c in configs if not import_promptfoo(EXAMPLES / c, _folder(c)).report.errors]
    assert clean == sorted(CLEAN)
    assert len(clean) >= 20


@pytest.mark.parametrize("config", CLEAN)
def test_example_imports_with_no_error_and_dry_runs(config, tmp_path, env):
    name = _folder(config)
    if name in NEEDS_NODE and shutil.which("node") is None:
        pytest.skip("its javascript assertion needs Node.js (node on PATH)")
    imported = import_promptfoo(EXAMPLES / config, name)
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
