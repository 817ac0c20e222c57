"""Every code block of the docs (and the README) that is an eval file validates against the JSON Schema.

A ```yaml block is an eval file when its title names one (``title="evals/x/eval.yaml"``,
``title="cases.yaml"``): pymdownx.superfences shows the title above the block.
"""

from __future__ import annotations

import re

import pytest

from tests.support.docs_site import CodeBlock, code_blocks, markdown_pages
from tests.support.eval_schemas import file_schema_errors
from tests.support.paths import REPO

_EVAL_FILE = re.compile(r"(^|/)(eval[\w-]*|cases[\w-]*)\.ya?ml$")
PAGES = [*markdown_pages(), REPO / "README.md"]
BLOCKS = [block for page in PAGES for block in code_blocks(page)
          if block.lang == "yaml" and block.title and _EVAL_FILE.search(block.title)]


def _id(block: CodeBlock) -> str:
    return f"{block.page.relative_to(REPO)}:{block.line}"


def test_the_eval_file_blocks_are_found():
    titles = {block.title for block in BLOCKS}
    assert {"evals/capitals/eval.yaml", "evals/capitals/cases.yaml"} <= titles


@pytest.mark.parametrize("block", BLOCKS, ids=_id)
def test_every_eval_file_block_validates_against_the_schema(block, tmp_path):
    path = tmp_path / block.title.rsplit("/", 1)[-1]
    path.write_text(block.text)
    assert file_schema_errors(path) == [], _id(block)
