"""Datasets: JSONL and YAML reading, row errors with line numbers, filter and sample."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.config.dataset import iter_dataset, select_cases
from evalh_pipeline.config.schema import EvalConfig
from evalh_pipeline.config.spec import EvalSpec


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def spec_for(dataset: Path, dataset_type: str = "jsonl", *, filter: dict | None = None,
             sample: int | None = None) -> EvalSpec:
    config = EvalConfig.model_validate({
        "eval": {"name": "ds"},
        "dataset": {"type": dataset_type, "path": str(dataset), "filter": filter or {}, "sample": sample},
        "systems": [{"name": "s", "adapter": "python_function", "target": "m:f"}],
    })
    return EvalSpec(path=dataset.parent / "eval.yaml", config=config, variants=[], dataset_path=dataset,
                    runs_root=str(dataset.parent / "runs"), raw={})


def ids(cases) -> list[str]:
    return [c.id for c in cases]


def numbered(n: int, **metadata) -> list[dict]:
    return [{"id": f"c{i:03d}", "metadata": {"i": i, **metadata}} for i in range(n)]


# --- reading ----------------------------------------------------------------------------

def test_jsonl_dataset_yields_cases_in_file_order_skipping_blank_lines(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "b", "input": {"q": 1}}\n\n{"id": "a", "expected": {"facts": {"x": 1}}}\n')
    cases = list(iter_dataset(path, "jsonl"))
    assert ids(cases) == ["b", "a"]
    assert cases[0].input == {"q": 1} and cases[1].expected.facts == {"x": 1}


def test_yaml_dataset_reads_the_cases_list(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text(textwrap.dedent("""\
        schema_version: "1.0"
        dataset: {name: demo}
        cases:
          - id: one
            input: {q: hello}
            expected: {answer_should_include: [hi]}
          - id: two
            metadata: {suburb: Richmond}
        """))
    cases = list(iter_dataset(path, "yaml"))
    assert ids(cases) == ["one", "two"]
    assert cases[0].expected.answer_should_include == ["hi"]
    assert cases[1].metadata == {"suburb": "Richmond"}


def test_yaml_dataset_without_cases_list_is_an_error(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text("items: []\n")
    with pytest.raises(ConfigError, match=r"cases.yaml:1 cases: a YAML dataset needs a 'cases:' list"):
        list(iter_dataset(path, "yaml"))


def test_yaml_dataset_with_schema_version_2_is_refused(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text('schema_version: "2.0"\ncases:\n  - id: a\n')
    with pytest.raises(ConfigError, match=r"cases.yaml:1 schema_version: .*'2.0'"):
        list(iter_dataset(path, "yaml"))


def test_duplicate_id_in_jsonl_names_the_line_of_the_repeat(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}\n\n{"id": "a"}\n')
    with pytest.raises(ConfigError) as info:
        list(iter_dataset(path, "jsonl"))
    assert str(info.value) == "cases.jsonl:4 id: duplicate case id 'a': ids must be unique"


def test_duplicate_id_in_yaml_names_the_line_and_index_of_the_repeat(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text("cases:\n  - id: a\n  - id: b\n  - id: a\n")
    with pytest.raises(ConfigError) as info:
        list(iter_dataset(path, "yaml"))
    assert str(info.value).startswith("cases.yaml:4 cases[2].id: duplicate case id 'a'")


def test_invalid_json_line_is_an_error_with_its_line_number(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b",,}\n')
    with pytest.raises(ConfigError) as info:
        list(iter_dataset(path, "jsonl"))
    assert str(info.value).startswith("cases.jsonl:2: invalid JSON:")


def test_row_missing_id_is_an_error_naming_line_and_key(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a"}\n{"input": {}}\n')
    with pytest.raises(ConfigError, match=r"^cases.jsonl:2 id: "):
        list(iter_dataset(path, "jsonl"))


# --- filter -----------------------------------------------------------------------------

def test_filter_bare_key_matches_metadata(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "a", "metadata": {"suburb": "Richmond"}},
        {"id": "b", "metadata": {"suburb": "Carlton"}},
        {"id": "c"},
    ])
    assert ids(select_cases(spec_for(path, filter={"suburb": "Carlton"}), "r1")) == ["b"]


def test_filter_list_is_a_set_of_allowed_values(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [
        {"id": s.lower(), "metadata": {"suburb": s}} for s in ("Richmond", "Carlton", "Fitzroy")
    ])
    spec = spec_for(path, filter={"suburb": ["Richmond", "Fitzroy"]})
    assert ids(select_cases(spec, "r1")) == ["richmond", "fitzroy"]


def test_filter_dotted_path_reaches_into_the_case(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "a", "input": {"lang": "en"}, "expected": {"facts": {"city": "Paris"}}},
        {"id": "b", "input": {"lang": "fr"}, "expected": {"facts": {"city": "Paris"}}},
        {"id": "c", "input": {"lang": "en"}, "expected": {"facts": {"city": "Rome"}}},
    ])
    spec = spec_for(path, filter={"input.lang": "en", "expected.facts.city": "Paris"})
    assert ids(select_cases(spec, "r1")) == ["a"]


def test_filter_on_a_case_field_name_uses_the_field_not_metadata(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "metadata": {"id": "b"}}, {"id": "b"}])
    assert ids(select_cases(spec_for(path, filter={"id": ["b"]}), "r1")) == ["b"]


# --- sample -----------------------------------------------------------------------------

def test_sample_selects_n_cases(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", numbered(40))
    assert len(list(select_cases(spec_for(path, sample=7), "run-a"))) == 7


def test_sample_is_deterministic_for_the_same_run_id(tmp_path):
    spec = spec_for(write_jsonl(tmp_path / "c.jsonl", numbered(40)), sample=7)
    assert ids(select_cases(spec, "run-a")) == ids(select_cases(spec, "run-a"))


def test_sample_differs_between_run_ids(tmp_path):
    spec = spec_for(write_jsonl(tmp_path / "c.jsonl", numbered(40)), sample=7)
    selections = {tuple(ids(select_cases(spec, f"run-{i}"))) for i in range(4)}
    assert len(selections) > 1


def test_sample_keeps_dataset_order(tmp_path):
    spec = spec_for(write_jsonl(tmp_path / "c.jsonl", numbered(40)), sample=10)
    chosen = ids(select_cases(spec, "run-order"))
    assert chosen == sorted(chosen)


def test_sample_larger_than_dataset_keeps_every_case(tmp_path):
    spec = spec_for(write_jsonl(tmp_path / "c.jsonl", numbered(3)), sample=10)
    assert ids(select_cases(spec, "r")) == ["c000", "c001", "c002"]


def test_sample_is_drawn_after_the_filter(tmp_path):
    rows = [{"id": f"c{i:03d}", "metadata": {"group": "even" if i % 2 == 0 else "odd"}} for i in range(30)]
    spec = spec_for(write_jsonl(tmp_path / "c.jsonl", rows), filter={"group": "odd"}, sample=5)
    chosen = ids(select_cases(spec, "r"))
    assert len(chosen) == 5 and all(int(c[1:]) % 2 == 1 for c in chosen)
