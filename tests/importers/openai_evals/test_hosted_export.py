"""`evalh import openai-evals` on an export of OpenAI's hosted Evals: the eval object's items
become cases, its ``string_check`` criteria their evaluators with OpenAI's verdicts, its runs'
output items a replayable baseline; what does not map is reported.

The fixtures (hosted/, see its README.md) follow the API reference's shapes:
https://platform.openai.com/docs/api-reference/evals. The string check rule is the graders
guide's (https://platform.openai.com/docs/guides/graders, "String check grader"): ``eq`` the
input equals the reference, ``ne`` it does not (both case-sensitive), ``like`` the input
contains the reference (case-sensitive), ``ilike`` contains it ignoring case.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.importers.openai_evals.hosted import import_hosted_export, is_hosted_export, string_check
from evalh_pipeline.importers.report import BadSource
from evalh_pipeline.importers.writing import check_loads, write_tree
from evalh_pipeline.models import EvalCase, Trace, TraceOutput

HOSTED = Path(__file__).parent / "hosted"
REGISTRY_FILE = Path(__file__).parent / "registry" / "evals" / "parity.yaml"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def verdict(operation: str, answer: str | None, reference: str) -> bool:
    mapping = string_check(operation, reference)
    assert mapping is not None
    evaluator = EVALUATORS.get(mapping["type"])("check", mapping["type"], mapping["config"])
    trace = Trace(run_id="r", case_id="c", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                  output=TraceOutput(final_answer=answer))
    return asyncio.run(evaluator.evaluate(EvalCase(id="c"), trace, None)).passed


# (answer, reference, eq, ne, like, ilike): the graders guide's rule on each pair.
CASES = [
    ("Paris", "Paris", True, False, True, True),
    ("paris", "Paris", False, True, False, True),            # case differs: only ilike
    ("Paris ", "Paris", False, True, True, True),            # no stripping: eq fails, contains holds
    ("It is Paris.", "Paris", False, True, True, True),
    ("It is PARIS.", "paris", False, True, False, True),
    ("Lyon", "Paris", False, True, False, False),
    ("a.c", "a.c", True, False, True, True),                  # regex characters are literal
    ("abc", "a.c", False, True, False, False),
    ("line1\nline2", "line1\nline2", True, False, True, True),
    ("anything", "", False, True, True, True),                # the empty reference is contained
    ("", "", True, False, True, True),
]


@pytest.mark.parametrize(("answer", "reference", "eq", "ne", "like", "ilike"), CASES)
def test_each_string_check_operation_gives_openais_verdict(answer, reference, eq, ne, like, ilike):
    for operation, expected in (("eq", eq), ("ne", ne), ("like", like), ("ilike", ilike)):
        assert verdict(operation, answer, reference) is expected, (operation, answer, reference)


def test_a_missing_answer_is_empty_text_for_every_operation():
    assert [verdict(op, None, "") for op in ("eq", "ne", "like", "ilike")] == [True, False, True, True]
    assert [verdict(op, None, "x") for op in ("eq", "ne", "like", "ilike")] == [False, True, False, False]


def test_an_export_is_told_from_a_registry_file():
    assert is_hosted_export(HOSTED / "export.json") and is_hosted_export(HOSTED / "eval-only.json")
    assert not is_hosted_export(REGISTRY_FILE)


def test_items_become_cases_with_rendered_messages_and_string_checks(tmp_path):
    imported = import_hosted_export(HOSTED / "export.json")
    cases = [json.loads(line) for line in imported.files["cases.jsonl"].splitlines()]
    assert [c["id"] for c in cases] == ["item-0", "item-1", "item-2"]
    first = cases[0]
    assert first["input"]["item"] == {"question": "Capital of France?", "answer": "Paris"}
    # The run's template, {{item.question}} rendered with the item.
    assert first["input"]["messages"] == [{"role": "developer", "content": "Answer with the city only."},
                                          {"role": "user", "content": "Capital of France?"}]
    assert [(e["name"], e["type"]) for e in first["evaluators"]] == [
        ("exact", "regex_match"), ("not the question", "regex_match"), ("mentions", "contains_text"),
        ("mentions any case", "contains_text"), ("grader", "openai_model_graded"), ("score", "openai_score_model")]
    assert first["evaluators"][2]["config"]["any_of"] == ["Paris"]
    # The label_model: its messages with the item rendered in and the answer as {completion},
    # a passing label the top score.
    grader = first["evaluators"][4]["config"]
    assert grader["prompt"] == [{"role": "developer",
                                 "content": "Is {completion} the capital asked in Capital of France??"}]
    assert (grader["choice_strings"], grader["choice_scores"], grader["model"]) == (
        ["yes", "no"], {"yes": 1.0, "no": 0.0}, "gpt-4o-mini")
    config = yaml.safe_load(imported.files["eval.yaml"])
    assert config["eval"]["name"] == "capitals"
    (system,) = config["systems"]
    assert (system["name"], system["adapter"], system["provider"]) == ("gpt-4o-mini", "http", "openai_chat")
    assert system["endpoint"] == "${OPENAI_BASE_URL:-https://api.openai.com/v1}/chat/completions"
    assert (system["temperature"], system["max_tokens"], system["seed"]) == (0.0, 64, 7)
    write_tree(tmp_path / "out", imported.files)
    check_loads(tmp_path / "out", {"OPENAI_API_KEY": "placeholder"})
    check_loads(tmp_path / "out", {}, "baseline.yaml")


def test_every_criterion_that_does_not_map_is_one_report_line():
    report = import_hosted_export(HOSTED / "export.json").report
    kinds = [item.key for item in report.findings]
    assert kinds == ["testing_criteria[4] ('close', text_similarity)", "testing_criteria[5] ('grader', label_model)",
                     "testing_criteria[7] ('py', python)"]
    assert all("baseline.yaml passes it as OpenAI recorded it" in item.text() for item in report.findings)
    assert report.findings[1].what.startswith("approximated by openai_model_graded")


def test_the_baseline_replays_each_output_with_openais_recorded_verdicts():
    imported = import_hosted_export(HOSTED / "export.json")
    baseline = yaml.safe_load(imported.files["baseline.yaml"])
    assert baseline["systems"] == [{"name": "gpt-4o-mini", "adapter": "replay",
                                    "metadata": {"source": "openai-evals", "model": "gpt-4o-mini"}}]
    # The criteria other than string checks pass as OpenAI recorded them (no model is called);
    # the string checks are judged again.
    assert [e["name"] for e in baseline["evaluators"]] == ["close", "grader", "score", "py"]
    cases = yaml.safe_load(imported.files["baseline-cases.yaml"])["cases"]
    assert [e["name"] for e in cases[0]["evaluators"]] == ["exact", "not the question", "mentions",
                                                            "mentions any case"]
    trace = cases[1]["embedded_traces"]["gpt-4o-mini"]
    assert trace["output"]["final_answer"] == "The capital is tokyo."
    assert trace["metrics"] == {"token_input": 12, "token_output": 3}
    assert trace["extra"]["openai_results"]["grader"] == {"passed": False, "score": 0.0}


def test_string_checks_on_other_fields_are_reported_and_strict_input_is_refused(tmp_path):
    export = json.loads((HOSTED / "eval-only.json").read_text())
    export["eval"]["testing_criteria"] += [
        {"type": "string_check", "name": "item vs item", "input": "{{item.answer}}", "reference": "Paris",
         "operation": "eq"},
        {"type": "string_check", "name": "bad op", "input": "{{sample.output_text}}", "reference": "x",
         "operation": "startswith"}]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    imported = import_hosted_export(path)
    assert [item.key for item in imported.report.findings] == ["testing_criteria[4].input",
                                                               "testing_criteria[5].operation"]
    assert "baseline.yaml" not in imported.files  # no output items: nothing to replay


def test_a_label_model_that_cannot_be_approximated_is_reported(tmp_path):
    export = json.loads((HOSTED / "export.json").read_text())
    export["testing_criteria"][5]["passing_labels"] = ["yes", "no"]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    line = import_hosted_export(path).report.findings[1]
    assert line.key == "testing_criteria[5] ('grader', label_model)"
    assert line.what == "passing_labels must be some, not all, of the labels"
    assert line.instead.startswith("not in eval.yaml")


def test_an_export_without_items_or_not_an_eval_is_one_line(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"object": "eval", "name": "x", "testing_criteria": []}))
    with pytest.raises(BadSource, match=r"^empty.json runs: no datasource item found"):
        import_hosted_export(empty)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"eval": {"object": "eval.run"}}))
    with pytest.raises(BadSource, match=r'^other.json object: must be "eval"'):
        import_hosted_export(other)


def test_a_second_run_with_another_template_or_a_missing_result_is_reported(tmp_path):
    export = json.loads((HOSTED / "export.json").read_text())
    second = json.loads(json.dumps(export["runs"][0]))
    second.update(id="evalrun_2", model="gpt-4o")
    second["data_source"]["input_messages"]["template"][0]["content"] = "Be brief."
    second["data_source"]["sampling_params"]["temperature"] = 0.7
    second["output_items"] = {"data": []}
    export["runs"].append(second)
    del export["runs"][0]["output_items"]["data"][0]["results"][5]  # the label grader's result
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    imported = import_hosted_export(path)
    keys = [item.key for item in imported.report.findings]
    assert "runs[1].data_source.input_messages" in keys and "runs[1].data_source.sampling_params" in keys
    assert "output_items[0].results" in keys
    config = yaml.safe_load(imported.files["eval.yaml"])
    assert [(s["name"], s["temperature"]) for s in config["systems"]] == [("gpt-4o-mini", 0.0), ("gpt-4o", 0.0)]


def test_a_python_grader_with_its_pass_threshold_runs_as_openai_python_grader(tmp_path):
    export = json.loads((HOSTED / "export.json").read_text())
    (criterion,) = [c for c in export["testing_criteria"] if c["type"] == "python"]
    criterion["pass_threshold"] = 0.5
    (tmp_path / "export.json").write_text(json.dumps(export))
    imported = import_hosted_export(tmp_path / "export.json")
    first = json.loads(imported.files["cases.jsonl"].splitlines()[0])
    (python,) = [e for e in first["evaluators"] if e["name"] == "py"]
    assert python == {"name": "py", "type": "openai_python_grader", "config": {
        "source": criterion["source"], "item": {"question": "Capital of France?", "answer": "Paris"},
        "pass_threshold": 0.5}}
    note = [f for f in imported.report.findings if f.key == "testing_criteria[7] ('py', python)"]
    assert [f.severity for f in note] == ["note"]
    # Deterministic code: the baseline judges it again on OpenAI's recorded answer.
    cases = yaml.safe_load(imported.files["baseline-cases.yaml"])["cases"]
    assert "py" in [e["name"] for e in cases[0]["evaluators"]]
    write_tree(tmp_path / "out", imported.files)
    check_loads(tmp_path / "out", {"OPENAI_API_KEY": "placeholder"})


def test_each_text_similarity_metric_and_a_multigrader_are_report_lines_with_why(tmp_path):
    # The metrics are those of OpenAI's graders guide (https://platform.openai.com/docs/guides/graders,
    # "Text similarity graders": fuzzy_match "using rapidfuzz", bleu, gleu, meteor, cosine
    # "using text-embedding-3-large", rouge_1..rouge_5, rouge_l), whose implementation it does not
    # give; `multi` is the guide's multigrader, for reinforcement fine-tuning.
    export = json.loads((HOSTED / "eval-only.json").read_text())
    metrics = ["fuzzy_match", "bleu", "gleu", "meteor", "cosine", "rouge_1", "rouge_2", "rouge_3", "rouge_4",
               "rouge_5", "rouge_l", "jaccard"]
    before = len(export["eval"]["testing_criteria"])
    export["eval"]["testing_criteria"] += [
        {"type": "text_similarity", "name": f"sim {m}", "input": "{{sample.output_text}}",
         "reference": "{{item.answer}}", "evaluation_metric": m, "pass_threshold": 0.5} for m in metrics]
    export["eval"]["testing_criteria"].append(
        {"type": "multi", "name": "both", "graders": {}, "calculate_output": "0.5 * a + 0.5 * b"})
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    findings = import_hosted_export(path).report.findings
    assert [f.key for f in findings] == [f"testing_criteria[{before + i}] ('sim {m}', text_similarity)"
                                         for i, m in enumerate(metrics)] + [
        f"testing_criteria[{before + len(metrics)}] ('both', multi)"]
    assert all(f.severity == "error" and "baseline.yaml passes it as OpenAI recorded it" in f.text() for f in findings)
    why = {m: f.what for m, f in zip(metrics, findings)}
    assert why["fuzzy_match"] == ("a fuzzy_match score against pass_threshold is not computed here: OpenAI's guide "
                                  "names rapidfuzz but not which ratio nor its scale")
    assert "text-embedding-3-large" in why["cosine"] and "ROUGE-L" in why["rouge_l"]
    assert why["jaccard"].startswith("evaluation_metric 'jaccard' is not one of OpenAI's (fuzzy_match, bleu,")
    assert "reinforcement fine-tuning grader" in findings[-1].what
