"""openai/evals' MultipleChoice class: the prompt, the shuffled options and the correct letter
are openai/evals' own (evals/elsuite/multiple_choice.py, formatting.py make_abc, eval.py
eval_all_samples' per-sample seed, at commit 4bfc1f58); the expected letters below are what
openai/evals' make_abc gives for these rows under that seed."""

from __future__ import annotations

import json
import textwrap

import pytest

from evalh_pipeline.importers.openai_evals.importer import import_registry_file
from evalh_pipeline.importers.report import BadSource
from evalh_pipeline.importers.writing import write_tree
from evalh_pipeline.runner.loading import load_eval

REGISTRY = """\
    mmlu-abstract-algebra:
      id: mmlu-abstract-algebra.val.ab-v1
      metrics: [accuracy]
    mmlu-abstract-algebra.val.ab-v1:
      class: evals.elsuite.multiple_choice:MultipleChoice
      args:
        dataset: hf://hendrycks_test?name=abstract_algebra&split=validation
    """
ROWS = [{"question": "Find the order of the group Z_4 x Z_6.", "answers": ["12", "24", "10", "6"], "label": 1},
        {"question": "What is 2+2?", "answers": ["3", "4", "5", "22"], "label": 1}]


def _registry(tmp_path, rows=ROWS):
    (tmp_path / "evals").mkdir()
    (tmp_path / "data").mkdir()
    path = tmp_path / "evals" / "mmlu.yaml"
    path.write_text(textwrap.dedent(REGISTRY))
    if rows is not None:
        (tmp_path / "data" / "mmlu-abstract-algebra.val.ab-v1.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_questions_become_openai_evals_prompts_with_the_correct_letter(tmp_path):
    (imported,) = import_registry_file(_registry(tmp_path))
    cases = [json.loads(line) for line in imported.files["cases.jsonl"].splitlines()]
    assert cases[0]["input"]["messages"] == [{"role": "system", "content":
        "\nPlease answer with the letter of the correct answer.\n\nFind the order of the group Z_4 x Z_6.\n"
        "A) 24\nB) 12\nC) 10\nD) 6"}]
    assert [c["expected"]["facts"]["ideal"] for c in cases] == ["A", "D"]
    # record_and_check_match: the answer starts with the letter (multiple_choice.py:86-90)
    assert cases[1]["evaluators"] == [{"name": "match", "type": "regex_match", "config": {"pattern": r"\A(?:D)"}}]
    assert imported.report.findings == []
    write_tree(tmp_path / "out", imported.files)
    spec = load_eval(tmp_path / "out" / "eval.yaml", {"OPENAI_API_KEY": "sk-test"}, strict=True)
    (system,) = spec.config.systems
    assert system.model_dump()["max_tokens"] == 1  # multiple_choice.py:80-84: temperature 0, one token


def test_a_dataset_not_exported_is_one_line_naming_where_its_rows_go(tmp_path):
    with pytest.raises(BadSource, match=r"mmlu.yaml:7 mmlu-abstract-algebra.val.ab-v1.args.dataset: "
                                        r"'hf://hendrycks_test\?name=abstract_algebra&split=validation' is a Hugging "
                                        r"Face dataset, which the import does not download"):
        import_registry_file(_registry(tmp_path, rows=None))


def test_a_row_that_is_not_a_sample_is_reported(tmp_path):
    (imported,) = import_registry_file(_registry(tmp_path, rows=[*ROWS, {"question": "x", "answers": ["a"], "label": 3}]))
    (finding,) = imported.report.findings
    assert finding.text().endswith("sample skipped") and ":3:" in finding.text()
