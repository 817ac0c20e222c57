"""`evalh import inspect`: an Inspect AI log (.json or .eval) becomes an eval whose replay
reproduces the log's outputs and scores; what does not map is reported; bad input is one line
and nothing is written.

The logs in logs/ are written by hand after inspect_ai's documented log schema
(src/inspect_ai/log/_log.py: EvalLog, EvalSample, Score; the .eval file is a zip of
header.json and samples/<id>_epoch_<n>.json): the task `arithmetic` scored by `match`
(C/I) and `closeness` (a float) for two models."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import yaml
from click.testing import CliRunner

from evalh_pipeline.cli import main
from evalh_pipeline.config.dataset import select_cases
from evalh_pipeline.runner.loading import load_eval

LOGS = Path(__file__).parent / "logs"


def _import(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["import", "inspect", *args], standalone_mode=False, catch_exceptions=False)
    return result.exit_code or 0, result.output


def _cases(folder: Path) -> list[dict]:
    return yaml.safe_load((folder / "cases.yaml").read_text())["cases"]


def test_a_json_log_imports_as_cases_replayed_and_scored_per_scorer(tmp_path):
    out = tmp_path / "a"
    code, output = _import(str(LOGS / "arithmetic-model-a.json"), "-o", str(out))
    assert code == 0, output
    assert "imported arithmetic: 6 case(s), 0 error(s), 0 note(s)" in output
    config = yaml.safe_load((out / "eval.yaml").read_text())
    assert config["systems"] == [{"name": "inspect", "adapter": "replay",
                                  "metadata": {"source": "inspect", "model": "openai/model-a"}}]
    assert [(e["name"], e["type"], e["config"]["field"]) for e in config["evaluators"]] == [
        ("match", "exact_match", "extra.inspect_scores.match.passed"),
        ("closeness", "exact_match", "extra.inspect_scores.closeness.passed")]
    cases = _cases(out)
    assert [c["id"] for c in cases] == ["q1", "q2", "q3", "q4", "q5", "q6"]
    q4 = cases[3]
    # Chat input with a content list: the text parts, roles kept.
    assert q4["input"] == {"messages": [{"role": "system", "content": "Answer with a number only."},
                                        {"role": "user", "content": "What is 6/2?"}]}
    assert q4["expected"] == {"facts": {"target": "3"}}
    assert q4["metadata"]["topic"] == "arithmetic"
    trace = q4["embedded_trace"]
    assert trace["output"] == {"final_answer": "3"}
    assert trace["messages"][-1] == {"role": "assistant", "content": "3"}
    assert trace["metrics"] == {"token_input": 12, "token_output": 1}
    # match C passes; closeness 0.5 fails under the default threshold 1.0 (q5 answered 11 for 10).
    scores = {c["id"]: {k: v["passed"] for k, v in c["embedded_trace"]["extra"]["inspect_scores"].items()}
              for c in cases}
    assert scores["q4"] == {"match": True, "closeness": True}
    assert scores["q5"] == {"match": False, "closeness": False}
    assert "Every construct maps" in (out / "import-report.md").read_text()
    spec = load_eval(out / "eval.yaml", {}, strict=True)
    assert len(list(select_cases(spec, "check"))) == 6


def test_the_eval_zip_and_the_json_form_of_one_log_import_the_same_cases(tmp_path):
    assert _import(str(LOGS / "arithmetic-model-b.json"), "-o", str(tmp_path / "json"))[0] == 0
    assert _import(str(LOGS / "arithmetic-model-b.eval"), "-o", str(tmp_path / "zip"))[0] == 0

    def without_source(folder: Path) -> list[dict]:
        cases = _cases(folder)
        for case in cases:
            case["metadata"].pop("inspect_source")
        return cases

    assert without_source(tmp_path / "json") == without_source(tmp_path / "zip")
    assert _cases(tmp_path / "zip")[0]["metadata"]["inspect_source"] == "arithmetic-model-b.eval!samples/q1_epoch_1.json"


def test_a_log_written_by_inspect_ai_with_zstd_members_imports_and_reports_its_errors(tmp_path):
    out = tmp_path / "echo"
    code, output = _import(str(LOGS / "echo-mockllm-inspect-0.3.285.eval"), "-o", str(out))
    assert code == 0, output
    assert "imported echo: 2 case(s), 0 error(s), 3 note(s)" in output
    cases = _cases(out)
    # samples/ in epoch order, then by id as written: `2` before `s1`.
    assert [(c["id"], c["input"]) for c in cases] == [
        ("2", {"messages": [{"role": "user", "content": "What is 2+2?"}]}),
        ("s1", {"messages": [{"role": "user", "content": "Say Default output from mockllm/model"}]})]
    assert cases[0]["metadata"]["kind"] == "math"
    assert cases[0]["expected"] == {"facts": {"target": "4"}}
    report = (out / "import-report.md").read_text()
    assert "note: status: the log's status is 'error'" in report
    assert report.count("note: error: the sample errored in Inspect") == 2
    assert yaml.safe_load((out / "eval.yaml").read_text())["metadata"]["model"] == "mockllm/model"


def test_the_pass_threshold_lets_partial_float_scores_pass(tmp_path):
    code, output = _import(str(LOGS / "arithmetic-model-a.json"), "-o", str(tmp_path / "a"), "--pass-threshold", "0.5")
    assert code == 0, output
    q5 = _cases(tmp_path / "a")[4]["embedded_trace"]["extra"]["inspect_scores"]
    assert (q5["match"]["passed"], q5["closeness"]["passed"]) == (False, True)


def test_a_package_scorer_name_is_an_evaluator_name_and_a_field_path_key(tmp_path):
    def edit(log):
        for sample in log["samples"]:
            sample["scores"]["mypkg/exact-match"] = sample["scores"].pop("match")

    code, output = _import(str(_edited_log(tmp_path, edit)), "-o", str(tmp_path / "out"))
    assert code == 0, output
    config = yaml.safe_load((tmp_path / "out" / "eval.yaml").read_text())
    assert [(e["name"], e["config"]["field"]) for e in config["evaluators"]] == [
        ("closeness", "extra.inspect_scores.closeness.passed"),
        ("mypkg_exact-match", "extra.inspect_scores.mypkg_exact_match.passed")]
    assert "- edited.json: note: scores.mypkg/exact-match: evaluator names allow no | , [ ] / \\; evaluator named 'mypkg_exact-match'" in (
        tmp_path / "out" / "import-report.md").read_text()
    score = _cases(tmp_path / "out")[0]["embedded_trace"]["extra"]["inspect_scores"]["mypkg_exact_match"]
    assert score == {"scorer": "mypkg/exact-match", "value": "C", "answer": "4", "explanation": "4", "passed": True}


def _edited_log(tmp_path: Path, edit) -> Path:
    log = json.loads((LOGS / "arithmetic-model-a.json").read_text())
    edit(log)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(log))
    return path


def test_unmapped_constructs_are_reported_and_strict_makes_them_errors(tmp_path):
    def edit(log):
        log["status"] = "error"
        log["samples"][1]["scores"]["match"]["value"] = {"a": 1}  # a dict of values: not one verdict
        del log["samples"][2]["scores"]["closeness"]
        log["samples"][3]["input"] = 42

    path = _edited_log(tmp_path, edit)
    code, output = _import(str(path), "-o", str(tmp_path / "strict"), "--strict")
    assert code != 0
    assert "4 construct(s) do not map (--strict); nothing written" in output
    assert not (tmp_path / "strict").exists()
    code, output = _import(str(path), "-o", str(tmp_path / "out"))
    assert code == 0, output
    report = (tmp_path / "out" / "import-report.md").read_text()
    assert "- edited.json: note: status: the log's status is 'error'" in report
    assert "- edited.json samples[1]: error: scores.match.value: {\"a\": 1} is not a single value" in report
    assert "- edited.json samples[2]: error: scores.closeness: the sample has no score from this scorer" in report
    assert "- edited.json samples[3]: error: input: neither text nor a list of chat messages; sample skipped" in report
    assert [c["id"] for c in _cases(tmp_path / "out")] == ["q1", "q2", "q3", "q5", "q6"]


def _bad(tmp_path: Path, path: Path) -> str:
    out = tmp_path / "out"
    code, output = _import(str(path), "-o", str(out))
    assert code != 0
    assert not out.exists()
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".out")] == []
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return lines[0]


def test_a_file_that_is_not_json_is_one_line_and_nothing_is_written(tmp_path):
    path = tmp_path / "log.json"
    path.write_text("not json\n")
    assert _bad(tmp_path, path).startswith("error: log.json:1: not a readable Inspect log (JSON expected)")


def test_json_that_is_not_an_inspect_log_is_one_line(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"results": []}))
    assert _bad(tmp_path, path) == "error: other.json eval.task: missing: not an Inspect log (an EvalLog has eval.task)"


def test_an_unreadable_eval_zip_is_one_line(tmp_path):
    path = tmp_path / "broken.eval"
    path.write_bytes((LOGS / "arithmetic-model-b.eval").read_bytes()[:200])
    assert "broken.eval: not a readable Inspect .eval log (a zip archive)" in _bad(tmp_path, path)


def test_an_eval_zip_without_its_header_is_one_line(tmp_path):
    path = tmp_path / "running.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("_journal/start.json", "{}")
    assert _bad(tmp_path, path) == "error: running.eval header.json: missing: not a finished Inspect .eval log"


def test_a_log_with_no_samples_is_one_line(tmp_path):
    path = _edited_log(tmp_path, lambda log: log.update(samples=[]))
    assert _bad(tmp_path, path) == "error: edited.json samples: the log holds no sample (nothing to import)"


def test_with_a_model_the_live_eval_judges_mapped_scorers_and_reports_the_rest(tmp_path):
    def edit(log):
        log["plan"]["steps"].insert(0, {"solver": "system_message", "params": {}})
        log["plan"]["config"] = {"temperature": 0.5, "max_tokens": 20, "logprobs": True}
        log["eval"]["scorers"] = [{"name": "match", "options": {"location": "exact"}}, {"name": "closeness"}]
        log["samples"][0]["messages"].insert(0, {"role": "system", "content": "Be brief."})

    path = _edited_log(tmp_path, edit)
    code, output = _import(str(path), "-o", str(tmp_path / "strict"), "--model", "m", "--strict")
    assert code != 0 and "2 construct(s) do not map (--strict); nothing written" in output
    code, output = _import(str(path), "-o", str(tmp_path / "out"), "--model", "m")
    assert code == 0, output
    report = (tmp_path / "out" / "import-report.md").read_text()
    assert ("- edited.json: error: plan.config.logprobs: a generate option evalh does not send; live.yaml leaves "
            "it out") in report
    assert ("- edited.json: error: scorers.closeness: scorer 'closeness' is not one evalh maps for a fresh run "
            "(match, includes); not judged in live.yaml (the replay keeps the log's verdicts)") in report
    # One final generate() after a system message: the recorded conversation carries that message.
    assert "plan.steps" not in report
    live = yaml.safe_load((tmp_path / "out" / "live.yaml").read_text())
    (system,) = live["systems"]
    assert (system["name"], system["adapter"], system["model"], system["temperature"], system["max_tokens"]) == (
        "inspect", "http", "m", 0.5, 20)
    assert "logprobs" not in system
    cases = yaml.safe_load((tmp_path / "out" / "live-cases.yaml").read_text())["cases"]
    assert cases[0]["input"]["messages"] == [{"role": "system", "content": "Be brief."},
                                             {"role": "user", "content": "What is 2+2?"}]
    assert [(e["name"], e["type"]) for e in cases[0]["evaluators"]] == [("match", "regex_match")]
    assert "embedded_trace" not in cases[0]
    # The replay's files are as without --model, its cases without what live.yaml sends.
    assert "Be brief." not in (tmp_path / "out" / "cases.yaml").read_text().split("embedded_trace")[0]
    spec = load_eval(tmp_path / "out" / "live.yaml", {"OPENAI_API_KEY": "k"})
    assert len(list(select_cases(spec, "r"))) == 6
