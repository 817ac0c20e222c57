"""promptfoo's own examples import with the report they should have, and `evalh run --dry-run`
accepts each imported eval.

promptfoo's examples are not in this repository (nor in its npm package): the tests run over a
checkout's ``examples/`` folder named by ``EVALH_PROMPTFOO_EXAMPLES`` (github.com/promptfoo/promptfoo)
and are skipped, saying so, without it. The features these examples exercise are covered in CI by
test_promptfoo_import.py's configs, written here. The same figure over any folder of examples
comes from `python -m tests.support.import_promptfoo_examples DIR`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from evalh_pipeline.importers.promptfoo import import_promptfoo
from evalh_pipeline.importers.writing import write_tree
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

VARIABLE = "EVALH_PROMPTFOO_EXAMPLES"
# The examples that use only what `evalh import promptfoo` maps (issue 37): each imports with no
# error in its report. Those with a javascript assertion need Node.js to be judged as promptfoo does.
# openai-tools-call is not here: promptfoo's own config picks the tool call out with `transform`,
# which is reported as not mapped (test_promptfoo_import.py covers its tools and their assertions).
CLEAN = [
    "assistant-cli/promptfooconfig.yaml", "compare-gpt-temperature/promptfooconfig.yaml",
    "compare-openai-models/promptfooconfig.yaml", "config-csv-metadata/promptfooconfig.yaml",
    "config-multiple-translations/promptfooconfig.yaml", "config-prompts-per-model/promptfooconfig.yaml",
    "config-vars-referencing-vars/promptfooconfig.yaml", "csv-metadata/promptfooconfig.yaml",
    "csv-prompts/promptfooconfig.yaml", "eval-self-grading/promptfooconfig.yaml",
    "eval-summarization/promptfooconfig.yaml", "getting-started/promptfooconfig.yaml", "gpt-3.5-vs-4/promptfooconfig.yaml",
    "gpt-4o-vs-4o-mini/promptfooconfig.yaml", "http-provider/promptfooconfig.yaml", "named-metrics/promptfooconfig.yaml",
    "openai-structured-output/promptfooconfig.chat.yaml", "prompts-per-model/promptfooconfig.yaml",
    "simple-cli/promptfooconfig.yaml", "simple-test/promptfooconfig.yaml",
]
NEEDS_NODE = {"eval-self-grading", "eval-summarization", "named-metrics", "simple-test"}


def _folder(config: str) -> str:
    return config.split("/")[0]


@pytest.fixture(scope="module")
def examples() -> Path:
    """promptfoo's ``examples/`` folder, from ``EVALH_PROMPTFOO_EXAMPLES``."""
    given = os.environ.get(VARIABLE)
    if not given:
        pytest.skip(f"PROMPTFOO EXAMPLES NOT GIVEN: the tests over promptfoo's own examples are SKIPPED; set {VARIABLE} "
                    "to the examples/ folder of a checkout of github.com/promptfoo/promptfoo to run them")
    path = Path(given)
    assert path.is_dir(), f"{VARIABLE}={given}: not a folder (it names promptfoo's examples/ folder)"
    return path


def test_the_listed_examples_are_there_and_at_least_twenty(examples):
    assert [c for c in CLEAN if not (examples / c).is_file()] == []
    assert len(CLEAN) >= 20


@pytest.mark.parametrize("config", CLEAN)
def test_example_imports_with_no_error_and_dry_runs(examples, config, tmp_path, env):
    name = _folder(config)
    if name in NEEDS_NODE and shutil.which("node") is None:
        pytest.skip("its javascript assertion needs Node.js (node on PATH)")
    imported = import_promptfoo(examples / config, name)
    assert imported.report.errors == []
    # Dagster names the eval's assets after it: letters, digits and `_` only.
    assert imported.eval_yaml["eval"]["name"] == name.replace("-", "_").replace(".", "_")
    write_tree(tmp_path / name, imported.files())
    dry = run_evalh(["run", str(tmp_path / name / "eval.yaml"), "--dry-run"],
                    {**env, "OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-test"}, tmp_path)
    assert dry.returncode == 0, dry.stderr
