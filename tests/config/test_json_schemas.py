"""The JSON Schemas shipped with the package are the models' own, and every example eval uses them."""

from __future__ import annotations

import json
import re
import pytest
import yaml

from evalh_pipeline import load_eval
from evalh_pipeline.config.dataset import dataset_cases
from evalh_pipeline.config.json_schemas import KINDS, json_schema, schema_text, shipped_schema_path
from tests.support.paths import REPO
from tests.support.eval_schemas import file_kind, file_schema_errors, schema_errors

EXAMPLES = sorted(p for p in (REPO / "evals").glob("*/*.y*ml")) + sorted((REPO / "examples").rglob("*.y*ml"))
# An eval file has a top-level `eval:`, a cases file a top-level `cases:` (a CI workflow neither).
EVAL_FILES = [p for p in EXAMPLES if re.search(r"^(eval|cases):", p.read_text(), re.MULTILINE)]


@pytest.mark.parametrize("kind", KINDS)
def test_the_shipped_schema_is_the_one_the_models_generate(kind):
    assert shipped_schema_path(kind).read_text(encoding="utf-8") == schema_text(kind), (
        "a model changed: rewrite the shipped schemas with .venv/bin/python -c 'from "
        "evalh_pipeline.config.json_schemas import write_shipped_schemas; write_shipped_schemas()'")
    assert json.loads(shipped_schema_path(kind).read_text())["$schema"].endswith("2020-12/schema")


def test_the_example_eval_files_are_found():
    names = {p.relative_to(REPO).as_posix() for p in EVAL_FILES}
    assert {"evals/quickstart/eval.yaml", "evals/quickstart/cases.yaml"} <= names


@pytest.mark.parametrize("path", EVAL_FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_example_names_its_schema_and_validates_against_it(path):
    first = path.read_text().splitlines()[0]
    kind = file_kind(yaml.safe_load(path.read_text()))
    expected = shipped_schema_path(kind)
    prefix = "# yaml-language-server: $schema="
    assert first.startswith(prefix), f"{path}: line 1 is not a {prefix} line"
    assert (path.parent / first.removeprefix(prefix)).resolve() == expected
    assert file_schema_errors(path) == []


@pytest.mark.parametrize("path", [p for p in EVAL_FILES if p.name.startswith("eval")],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_loader_reads_an_eval_whose_first_line_is_the_schema_comment(path):
    spec = load_eval(path, env={"EVALH_JUDGE_URL": "http://127.0.0.1:8765", "HTTP_AGENT_PORT": "8766"})
    assert list(dataset_cases(spec))


def test_the_schema_refuses_what_the_loader_refuses():
    eval_file = {"eval": {"name": "x"}, "dataset": {"type": "yaml", "path": "cases.yaml"},
                 "systems": [{"name": "a", "adapter": "python"}]}
    assert schema_errors(eval_file, "eval") == []
    assert any("evaluatorz" in e for e in schema_errors({**eval_file, "evaluatorz": []}, "eval"))
    assert schema_errors({**eval_file, "systems": []}, "eval")
    assert any("cases" in e for e in schema_errors({"schema_version": "1.0"}, "cases"))
    assert schema_errors({"cases": [{"id": "a", "input": {"q": "?"}}]}, "cases") == []
    assert schema_errors({"cases": [{"input": {"q": "?"}}]}, "cases")
    assert json_schema("cases")["properties"]["cases"]["items"] == {"$ref": "#/$defs/EvalCase"}
