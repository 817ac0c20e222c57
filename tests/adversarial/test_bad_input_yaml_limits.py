"""Issue 11, items 15 and 16: YAML that costs more than its size.

A 313-byte alias bomb took 47 s and 1.2 GB at 7 levels and grew without bound at 9;
5000 levels of nesting printed a 3000-line RecursionError traceback. Every YAML the tool
reads (eval.yaml, YAML datasets, price tables, the run files it wrote) now stops at a
depth and an alias budget with one line naming the file and the line.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from tests.adversarial.leaks import error_text
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

MAX_DEPTH = 100  # common/yaml_files.py

HEADER = """\
eval: {name: hostile}
dataset: {type: jsonl, path: cases.jsonl}
systems:
  - {name: a, adapter: python_function, target: agent:run}
"""


def alias_bomb(levels: int, indent: str = "") -> str:
    """The classic "billion laughs": each level repeats the previous one nine times."""
    lines = [f'{indent}l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"{indent}l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def one_error_line(proc) -> str:
    """The single problem line of a config error (after the ``error:`` heading), unwrapped."""
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
    assert "error:" in proc.stderr, proc.stderr
    return error_text(proc.stderr)


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    return tmp_path


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_an_alias_bomb_in_eval_yaml_is_refused_at_once(folder, env, dry_run):
    (folder / "eval.yaml").write_text(HEADER + "metadata:\n" + alias_bomb(9, "  "))
    proc = run_evalh(["run", *(["--dry-run"] if dry_run else []), "eval.yaml"], env, folder, timeout=60)
    message = one_error_line(proc)
    assert re.match(r"eval\.yaml:1[0-4]: invalid YAML: aliases repeat more than 100,000 nodes", message), message
    assert not (folder / "runs").exists()


def test_an_alias_bomb_in_a_yaml_dataset_is_refused(folder, env):
    (folder / "cases.yaml").write_text("bomb:\n" + alias_bomb(9, "  ") + "cases:\n  - {id: c1, input: {}}\n")
    (folder / "eval.yaml").write_text(HEADER.replace("{type: jsonl, path: cases.jsonl}", "{type: yaml, path: cases.yaml}"))
    message = one_error_line(run_evalh(["run", "--dry-run", "eval.yaml"], env, folder, timeout=60))
    assert message.startswith("cases.yaml:") and "aliases repeat more than" in message, message


def test_an_alias_bomb_in_a_price_table_is_refused(folder, env):
    (folder / "prices.yaml").write_text("as_of: 2026-01-01\nbomb:\n" + alias_bomb(9, "  ") + "models: {}\n")
    (folder / "eval.yaml").write_text(HEADER + "metrics: {price_table_path: prices.yaml}\n")
    message = one_error_line(run_evalh(["run", "--dry-run", "eval.yaml"], env, folder, timeout=60))
    assert "metrics.price_table_path" in message and "prices.yaml:" in message and "aliases repeat" in message


@pytest.mark.parametrize("where", ["eval.yaml", "cases.yaml", "cases.jsonl"])
def test_5000_levels_of_nesting_are_one_line_with_file_and_line(folder, env, where):
    if where == "eval.yaml":
        (folder / "eval.yaml").write_text(HEADER + f"metadata:\n  deep: {deep(5000)}\n")
        expected = f"eval.yaml:6: invalid YAML: nested deeper than {MAX_DEPTH} levels"
    elif where == "cases.yaml":
        (folder / "cases.yaml").write_text(f"cases:\n  - id: c1\n    input: {{deep: {deep(5000)}}}\n")
        (folder / "eval.yaml").write_text(HEADER.replace("{type: jsonl, path: cases.jsonl}", "{type: yaml, path: cases.yaml}"))
        expected = f"cases.yaml:3: invalid YAML: nested deeper than {MAX_DEPTH} levels"
    else:
        (folder / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n"
                                            + '{"id": "c2", "input": {"deep": ' + deep(5000) + "}}\n")
        (folder / "eval.yaml").write_text(HEADER)
        expected = f"cases.jsonl:2: nested deeper than {MAX_DEPTH} levels"
    for args in (["run", "--dry-run", "eval.yaml"], ["run", "eval.yaml"]):
        message = one_error_line(run_evalh(args, env, folder, timeout=60))
        assert message == expected
    assert not any((folder / "runs").glob("*/run.json"))


def test_ordinary_anchors_and_nesting_still_load(folder, env):
    cases = "defaults: &defaults {group: a, tags: [x, y]}\ncases:\n" + "".join(
        f"  - {{id: c{i}, input: {{q: {deep(40)}}}, metadata: *defaults}}\n" for i in range(300))
    (folder / "cases.yaml").write_text(cases)
    (folder / "eval.yaml").write_text(HEADER.replace("{type: jsonl, path: cases.jsonl}", "{type: yaml, path: cases.yaml}"))
    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, folder, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "cases: 300" in proc.stdout


@pytest.mark.parametrize(("text", "problem"), [
    (alias_bomb(9), "aliases repeat more than"),
    ("a: &x [1, *x]\n", "recursive aliases are not allowed"),
    ("summary: " + deep(200_000) + "\n", f"nested deeper than {MAX_DEPTH} levels"),
])
def test_run_files_the_tool_reads_back_have_the_same_limits(text, problem):
    # summary.yaml, config.yaml and drift.yaml are read with load_yaml_text: a run folder
    # someone edited (or a hostile copy) must not hang `evalh compare` or crash libyaml.
    from evalh_pipeline.common.yaml_files import YamlLimitError, load_yaml_text

    with pytest.raises(YamlLimitError) as info:
        load_yaml_text(text)
    assert problem in str(info.value) and "\n" not in str(info.value)
    assert isinstance(info.value, yaml.YAMLError)
