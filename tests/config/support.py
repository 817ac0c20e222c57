"""The eval.yaml the config tests start from, and how they write one and read its error."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval

# Line numbers matter: `adapter` is on line 8, as in the README example.
BASE = """\
eval:
  name: demo
dataset:
  type: jsonl
  path: cases.jsonl
systems:
  - name: base
    adapter: python_function
    target: agent:run
evaluators:
  - name: mentions
    type: contains_text
"""


def write(folder: Path, text: str, *, cases: bool = True) -> Path:
    """``text`` (dedented) as ``folder``/eval.yaml, with a one-case cases.jsonl unless ``cases`` is False."""
    folder.mkdir(parents=True, exist_ok=True)
    if cases:
        (folder / "cases.jsonl").write_text('{"id": "a", "input": {"q": "x"}}\n')
    path = folder / "eval.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def config_error(path: Path, env: dict[str, str] | None = None) -> str:
    """The ConfigError text loading ``path`` raises (the test fails if it loads)."""
    with pytest.raises(ConfigError) as info:
        load_eval(path, env=env or {})
    return str(info.value)
