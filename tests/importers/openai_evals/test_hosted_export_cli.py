"""A hosted Evals export through the CLI, as processes: `evalh import openai-evals` writes an
eval that `evalh run --dry-run` accepts, and a baseline that replays OpenAI's outputs with
OpenAI's recorded verdicts; a fresh run against a local OpenAI-compatible server compares
with it case by case. Fixtures: hosted/README.md (the API reference's shapes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.evalh_process import run_evalh
from tests.support.scripted_chat_server import ScriptedChatServer

pytestmark = pytest.mark.e2e
HOSTED = Path(__file__).parent / "hosted"
KEY = "sk-hosted-import-key-0123456789"


def _run_dir(runs: Path, before: set[Path]) -> Path:
    (found,) = [p for p in runs.iterdir() if not p.name.startswith(".") and p.is_dir() and p not in before
                and (p / "results.jsonl").exists()]
    return found


def test_an_export_imports_dry_runs_and_its_baseline_replays_openais_verdicts(tmp_path: Path, env):
    out = tmp_path / "capitals"
    proc = run_evalh(["import", "openai-evals", str(HOSTED / "export.json"), "-o", str(out)], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "imported capitals: 3 case(s), 2 error(s), 1 note(s)" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == ["baseline-cases.yaml", "baseline.yaml", "cases.jsonl",
                                                     "eval.yaml", "import-report.md"]
    proc = run_evalh(["run", str(out / "eval.yaml"), "--dry-run"], {**env, "OPENAI_API_KEY": KEY}, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    runs = tmp_path / "runs"
    proc = run_evalh(["run", str(out / "baseline.yaml")], env, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    baseline_run = _run_dir(runs, set())
    results = [json.loads(line) for line in (baseline_run / "results.jsonl").read_text().splitlines()]
    # Every criterion of every output item: the replay's verdict is the one OpenAI recorded
    # (string checks judged again by their evaluators, the others read from the record).
    export = json.loads((HOSTED / "export.json").read_text())
    recorded = {(f"item-{o['datasource_item_id']}", r["name"].rsplit("-", 1)[0]): r["passed"]
                for o in export["runs"][0]["output_items"]["data"] for r in o["results"]}
    judged = {(r["case_id"], r["evaluator"]): r["passed"] for r in results}
    assert judged == recorded and len(judged) == 3 * 8

    # A fresh run of the imported eval: the model now answers item-1 exactly, the label
    # grader (label_model, approximated) says yes and the score grader (score_model) gives
    # 0.75 of [0, 1] against its pass_threshold 0.5.
    answers = {"Capital of France?": "Paris", "Capital of Japan?": "Tokyo", "Capital of Peru?": "Lima"}

    def script(prompt: str) -> str | None:
        grading = prompt.startswith("Is ") and "Answer the question by printing only" in prompt
        if prompt.startswith("Score "):
            return '{"steps": [{"description": "matches", "conclusion": "good"}], "result": 0.75}'
        return "yes" if grading else answers.get(prompt)

    with ScriptedChatServer(script) as server:
        proc = run_evalh(["run", str(out / "eval.yaml")],
                         {**env, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fresh_run = _run_dir(runs, {baseline_run})
    fresh = {(r["case_id"], r["evaluator"]): r["passed"]
             for r in map(json.loads, (fresh_run / "results.jsonl").read_text().splitlines())}
    assert all(fresh.values()) and len(fresh) == 3 * 6  # the string checks, the label and score graders
    scored = sorted(r.body["messages"][0]["content"] for r in server.requests if "response_format" in r.body)
    assert scored == ["Score Lima", "Score Paris", "Score Tokyo"]
    graded = [r.body["messages"][0]["content"] for r in server.requests if r.body["model"] == "gpt-4o-mini"
              and r.body["messages"][0]["content"].startswith("Is ")]
    assert sorted(g.split("\n")[0] for g in graded) == ["Is Lima the capital asked in Capital of Peru??",
                                                        "Is Paris the capital asked in Capital of France??",
                                                        "Is Tokyo the capital asked in Capital of Japan??"]
    proc = run_evalh(["compare", str(baseline_run), str(fresh_run), "--json"], env, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (variant,) = json.loads(proc.stdout)["variants"]
    # Paired by case: item-1 failed OpenAI's checks (label_model too) and passes now.
    assert (variant["variant"], variant["cases_compared"], variant["improvements"], variant["regressions"]) == (
        "gpt-4o-mini", 3, 1, 0)
    assert KEY not in proc.stdout + proc.stderr
    assert [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()] == []


def test_strict_refuses_an_export_with_unmapped_criteria_and_writes_nothing(tmp_path: Path, env):
    out = tmp_path / "capitals"
    proc = run_evalh(["import", "openai-evals", str(HOSTED / "export.json"), "-o", str(out), "--strict"],
                     env, tmp_path)
    assert proc.returncode != 0
    assert "testing_criteria[5] ('grader', label_model)" in proc.stderr
    assert "3 construct(s) do not map (--strict); nothing written" in proc.stderr
    assert not out.exists()


def test_an_export_of_only_string_checks_imports_under_strict(tmp_path: Path, env):
    out = tmp_path / "capitals"
    proc = run_evalh(["import", "openai-evals", str(HOSTED / "eval-only.json"), "-o", str(out), "--strict"],
                     env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Every construct maps" in (out / "import-report.md").read_text()


def test_registry_only_options_on_an_export_are_one_line_and_nothing_is_written(tmp_path: Path, env):
    out = tmp_path / "capitals"
    proc = run_evalh(["import", "openai-evals", str(HOSTED / "export.json"), "-o", str(out), "--eval", "x"],
                     env, tmp_path)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        f"error: {HOSTED / 'export.json'}: --eval: for registry files only, not for a hosted Evals export "
        "(its graders name their models)"]
    assert not out.exists()
