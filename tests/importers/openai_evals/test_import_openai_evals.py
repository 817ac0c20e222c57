"""`evalh import openai-evals`: registry files become evals that load and dry-run; what does
not map is reported with its file and line; bad input is one line and nothing is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from evalh_pipeline.cli import main
from evalh_pipeline.config.dataset import select_cases
from evalh_pipeline.runner.loading import load_eval
from tests.support.openai_evals_wheel import WheelRegistry


def _import(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["import", "openai-evals", *args], standalone_mode=False, catch_exceptions=False)
    return result.exit_code or 0, result.output


def _cases(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]


def _born_first(registry: WheelRegistry) -> Path:
    registry.data("born_first/born_first.jsonl")
    return registry.evals("born-first.yaml")


def test_a_match_eval_imports_as_cases_with_their_own_evaluator_and_dry_runs(wheel_registry, tmp_path):
    out = tmp_path / "born_first"
    source = _born_first(wheel_registry)
    code, output = _import(str(source), "-o", str(out), "--model", "gpt-4o", "--model", "gpt-4o-mini")
    assert code == 0, output
    assert "imported born-first: 122 case(s)" in output
    config = yaml.safe_load((out / "eval.yaml").read_text())
    # Dagster names an eval's assets and jobs after it and allows no `-`: the registry's name is metadata.
    assert config["eval"] == {"name": "born_first", "description": "Test the model's ability to determine who was born first.",
                              "tags": ["openai-evals"]}
    assert config["metadata"]["registry_eval"] == "born-first"
    assert [s["name"] for s in config["systems"]] == ["gpt-4o", "gpt-4o-mini"]
    assert config["systems"][0]["endpoint"] == "${OPENAI_BASE_URL:-https://api.openai.com/v1}/chat/completions"
    assert config["systems"][0]["headers"] == {"Authorization": "Bearer ${OPENAI_API_KEY}"}
    first = _cases(out)[0]
    assert first["input"]["messages"] == [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Was Abraham Lincoln born before Franklin Pierce? Answer Y or N."}]
    assert first["evaluators"] == [{"name": "match", "type": "regex_match", "config": {"pattern": r"\A(?:N)"}}]
    assert first["expected"] == {"facts": {"ideal": "N"}}
    # Loads as `evalh run --dry-run` loads it: every row validated with the evaluator registry.
    spec = load_eval(out / "eval.yaml", {"OPENAI_API_KEY": "sk-x"}, strict=True)
    assert [c.evaluators[0].name for c in select_cases(spec, "r")] == ["match"] * 122
    # What does not map is in the report beside the eval, with its file and line.
    report = (out / "import-report.md").read_text()
    assert f"- {source}:6: note: born-first.dev.v0.class: " in report
    assert "'boostrap_std', which is not computed" in report


def test_several_evals_of_a_file_go_to_one_folder_each_and_fuzzy_match_reads_its_args(wheel_registry, tmp_path):
    out = tmp_path / "basic"
    wheel_registry.data("test_fuzzy_match/samples.jsonl")
    # test-basic.yaml's test-match uses a test-only grader (TestMatch): import the others.
    code, output = _import(str(wheel_registry.evals("test-basic.yaml")), "-o", str(out), "--eval", "test-fuzzy-match")
    assert code == 0, output
    config = yaml.safe_load((out / "eval.yaml").read_text())
    assert {k: v for k, v in config["systems"][0].items() if k in ("temperature", "max_tokens")} == {
        "temperature": 0.0, "max_tokens": 100}
    assert _cases(out)[0]["evaluators"] == [
        {"name": "fuzzy_match", "type": "fuzzy_match", "config": {"any_of": ["Millie Bobby Brown"]}}]
    assert "'f1_score' is not computed" in (out / "import-report.md").read_text()


def test_includes_with_ignore_case_and_match_with_few_shot_examples(wheel_registry, tmp_path):
    wheel_registry.data("test_fuzzy_match/samples.jsonl", "anagrams/samples.jsonl", "anagrams/fewshot.jsonl")
    code, output = _import(str(wheel_registry.evals("test-basic.yaml")), "-o", str(tmp_path / "inc"),
                           "--eval", "test-includes-ignore-case")
    assert code == 0, output
    assert _cases(tmp_path / "inc")[1]["evaluators"][0] == {"name": "includes", "type": "contains_text", "config": {
        "any_of": ["Season 11", "11"], "all_of": [], "none_of": [], "case_sensitive": False}}
    code, output = _import(str(wheel_registry.evals("anagrams.yaml")), "-o", str(tmp_path / "ana"))
    assert code == 0, output
    # match.py:38-44: the 5 few-shot samples go before the last message.
    messages = [m["content"] for m in _cases(tmp_path / "ana")[0]["input"]["messages"]]
    assert len(messages) == 12
    assert messages[0] == "Find the anagram of the input word (output is a single word)"
    assert messages[1:3] == ["cebyiilsatisc", "accessibility"] and messages[-1] == "aotliibcyauntc"


def test_an_unsupported_grader_is_one_line_and_nothing_is_written(wheel_registry, tmp_path):
    out = tmp_path / "basic"
    source = wheel_registry.evals("test-basic.yaml")
    code, output = _import(str(source), "-o", str(out))
    assert code == 1
    assert output.strip().splitlines() == [
        f"error: {source}:7 test-match.s1.simple-v0.class: grader "
        "'evals.elsuite.test.match:TestMatch' has no evalh mapping (supported: evals.elsuite.basic.match:Match, "
        "evals.elsuite.basic.includes:Includes, evals.elsuite.basic.fuzzy_match:FuzzyMatch, "
        "evals.elsuite.modelgraded.classify:ModelBasedClassify, evals.elsuite.multiple_choice:MultipleChoice)"]
    assert not out.exists() and list(tmp_path.iterdir()) == []


def _registry(tmp_path: Path, entry: str, samples: bytes | None = b'{"input": "q", "ideal": "a"}\n') -> Path:
    (tmp_path / "reg" / "evals").mkdir(parents=True)
    (tmp_path / "reg" / "data" / "s").mkdir(parents=True)
    if samples is not None:
        (tmp_path / "reg" / "data" / "s" / "samples.jsonl").write_bytes(samples)
    path = tmp_path / "reg" / "evals" / "e.yaml"
    path.write_text(entry)
    return path


MATCH = "e:\n  id: e.dev.v0\ne.dev.v0:\n  class: evals.elsuite.basic.match:Match\n  args:\n    samples_jsonl: s/samples.jsonl\n"


def _bad(tmp_path: Path, path: Path, *extra: str) -> str:
    out = tmp_path / "out"
    code, output = _import(str(path), "-o", str(out), *extra)
    assert code == 1 and not out.exists(), output
    assert [p.name for p in path.parent.parent.parent.iterdir()] == ["reg"]  # no staging folder left
    (line,) = output.strip().splitlines()
    return line


def test_bad_input_is_one_line_naming_file_line_and_key(tmp_path):
    assert _bad(tmp_path, _registry(tmp_path, "just: text\n")).endswith(
        "e.yaml:1: not an openai/evals registry file (a mapping of eval names to entries, one of them with a "
        "`class:`, as in evals/registry/evals/*.yaml)")


def test_a_missing_samples_file_is_one_line_at_its_key(tmp_path):
    line = _bad(tmp_path, _registry(tmp_path, MATCH, samples=None))
    assert line.startswith("error: ") and "e.yaml:6 e.dev.v0.args.samples_jsonl: file not found: " in line


def test_a_git_lfs_pointer_instead_of_samples_says_so(tmp_path):
    # What a checkout without Git LFS has in place of a samples file (the pointer format; our own object).
    pointer = (b"version https://git-lfs.github.com/spec/v1\n"
               b"oid sha256:" + b"5e" * 32 + b"\nsize 4096\n")
    line = _bad(tmp_path, _registry(tmp_path, MATCH, samples=pointer))
    assert line.endswith("samples.jsonl:1: a Git LFS pointer, not the samples: fetch them first "
                         "(`git lfs pull` in the openai/evals checkout)")


def test_unreadable_samples_are_one_line(tmp_path):
    assert _bad(tmp_path, _registry(tmp_path, MATCH, samples=b'{"input": "q", "ideal": "a"}\n{"input": \n')).endswith(
        "samples.jsonl:2: invalid JSON: Expecting value")
    shutil.rmtree(tmp_path / "reg")
    assert _bad(tmp_path, _registry(tmp_path, MATCH, samples=b'{"input": "\xff"}\n')).endswith(
        "samples.jsonl:1: not UTF-8 text")
    shutil.rmtree(tmp_path / "reg")
    assert "invalid YAML" in _bad(tmp_path, _registry(tmp_path, "e: [\n"))


def test_unmapped_samples_and_keys_are_reported_and_strict_refuses_them(tmp_path):
    samples = b'{"input": "q", "ideal": "a"}\n{"input": [1, 2], "ideal": "a"}\n{"input": "q2", "ideal": 3}\n'
    path = _registry(tmp_path, MATCH.replace("    samples_jsonl", "    seed: 7\n    samples_jsonl"), samples)
    out = tmp_path / "out"
    code, output = _import(str(path), "-o", str(out), "--strict")
    assert code == 1 and not out.exists()
    assert f"{path}:6: error: e.dev.v0.args.seed: not read by the mapping of evals.elsuite.basic.match:Match; ignored" in output
    assert "samples.jsonl:2: error: input: neither a text prompt nor a list of chat messages" in output
    assert "samples.jsonl:3: error: ideal: must be a string or a list of strings" in output
    code, output = _import(str(path), "-o", str(out))
    assert code == 0, output
    assert len(_cases(out)) == 1
    report = (out / "import-report.md").read_text()
    assert "samples.jsonl:2: error: input:" in report and "samples.jsonl:3: error: ideal:" in report


def test_an_output_folder_with_files_is_refused(wheel_registry, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, output = _import(str(_born_first(wheel_registry)), "-o", str(out))
    assert code == 1 and "the output folder exists and is not empty" in output
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_a_fuzzy_match_sample_without_an_ideal_is_reported_not_imported(tmp_path):
    fuzzy = MATCH.replace("basic.match:Match", "basic.fuzzy_match:FuzzyMatch")
    path = _registry(tmp_path, fuzzy, b'{"input": "q", "ideal": "a"}\n{"input": "q2", "ideal": []}\n')
    code, output = _import(str(path), "-o", str(tmp_path / "out"))
    assert code == 0, output
    assert [c["id"] for c in _cases(tmp_path / "out")] == ["sample-0"]
    assert "samples.jsonl:2: error: ideal: empty: openai/evals raises on it (utils.py:88" in output


def test_samples_none_of_which_import_are_one_line_saying_why(tmp_path):
    line = _bad(tmp_path, _registry(tmp_path, MATCH, samples=b'{"input": "q", "ideal": 7}\n\n'))
    assert line.endswith("samples.jsonl: no sample could be imported (1 skipped; the first: "
                         f"{tmp_path / 'reg' / 'data' / 's' / 'samples.jsonl'}:1: error: ideal: must be a string or a list "
                         "of strings (openai/evals asserts it); sample skipped)")
    shutil.rmtree(tmp_path / "reg")
    assert _bad(tmp_path, _registry(tmp_path, MATCH, samples=b"\n")).endswith(
        "samples.jsonl: the samples file holds no sample")


def test_a_model_graded_eval_carries_its_spec_and_is_graded_by_the_grader_model(parity_registry, tmp_path):
    out = tmp_path / "closedqa"
    code, output = _import(str(parity_registry / "evals" / "parity.yaml"), "-o", str(out), "--eval", "parity-closedqa",
                           "--model", "m-under-test", "--grader-model", "m-grader")
    assert code == 0, output
    (system,) = yaml.safe_load((out / "eval.yaml").read_text())["systems"]
    assert system["model"] == "m-under-test" and system["max_tokens"] == 1024 and system["top_p"] == 1
    (evaluator,) = _cases(out)[5]["evaluators"]
    config = evaluator["config"]
    assert (evaluator["type"], config["model"], config["choice_strings"], config["choice_scores"]) == (
        "openai_model_graded", "m-grader", ["Y", "N"], {"Y": 1.0, "N": 0.0})
    assert config["parse_type"] == "cot_classify" and config["eval_type"] is None  # the spec's eval_type parses
    assert config["prompt"].startswith("You are assessing a submitted answer on a given task based on a criterion.")
    # The sample's input is scrubbed of formatting as openai/evals does; the spec args join the values.
    assert config["values"]["input"][1]["content"] == "g6 {{x}}"
    assert config["values"]["criteria"] == "correctness: Is the answer correct?"
    assert "a case passes when its choice has the highest score" in (out / "import-report.md").read_text()


def test_an_unknown_modelgraded_spec_is_one_line(tmp_path):
    path = _registry(tmp_path, MATCH.replace("basic.match:Match", "modelgraded.classify:ModelBasedClassify")
                     + "    modelgraded_spec: nope\n")
    (tmp_path / "reg" / "modelgraded").mkdir()
    assert _bad(tmp_path, path).endswith(f"e.yaml:7 e.dev.v0.args.modelgraded_spec: no spec 'nope' in "
                                         f"{tmp_path / 'reg' / 'modelgraded'}")
