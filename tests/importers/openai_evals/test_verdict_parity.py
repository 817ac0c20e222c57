"""Verdict parity with openai/evals: each supported grader, imported, run against a local
OpenAI-compatible server, gives openai/evals' verdict on every sample.

The server answers each prompt from a script, so the model's answer is fixed; the expected
verdicts (``SCRIPT``, tests/importers/openai_evals/support.py) are what openai/evals' code (commit 4bfc1f58) decides for that answer:

- Match (evals/elsuite/basic/match.py:50-58, evals/api.py:79-92): the answer
  ``startswith`` one of the ideals (no stripping; no ideal: no match).
- Includes (evals/elsuite/basic/includes.py:34-46, evals/elsuite/utils.py:17-25): an ideal
  occurs in the answer (``rfind`` != -1); ``ignore_case`` lower-cases both first.
- FuzzyMatch (evals/elsuite/basic/fuzzy_match.py:38-44, evals/elsuite/utils.py:36-53):
  normalized (lower, ASCII punctuation out, a/an/the out, whitespace collapsed), one
  contains the other; two empty texts match.

It also checks what openai/evals sends (the chat messages, a text prompt as one system
message: evals/prompt/base.py:59-63,115-125; Match's temperature 0: match.py:50-53;
Includes' bare call: includes.py:31-33; FuzzyMatch's temperature 0 and max_tokens 100:
fuzzy_match.py:32-36), and that the API key reaches the server but no file.

Where openai/evals' own ``oaieval`` is installed (``./dev test`` installs it:
tests/support/openai_evals_wheel.py's ``oaieval_path``), a test runs it on the same server and
compares every verdict with evalh's (test_oaieval_side_by_side.py does the same over entries
of openai/evals' own registry).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from evalh_pipeline.common.settings import Settings
from evalh_pipeline.importers.openai_evals.importer import import_registry_file
from evalh_pipeline.importers.writing import check_loads, write_imports
from evalh_pipeline.runner.loading import load_eval
from tests.importers.openai_evals.support import REGISTRY, SCRIPT, run_imported
from tests.support.openai_evals_wheel import OAIEVAL_MISSING, oaieval_path
from tests.support.scripted_chat_server import ScriptedChatServer

KEY = "sk-parity-test-key-0123456789"

# FuzzyMatch raises on a sample without an ideal (utils.py:88): its samples leave q14 out
# (data/parity/fuzzy_samples.jsonl), and the import skips such a sample with a report line.
EVALS = ["parity-match", "parity-includes", "parity-includes-ignore-case", "parity-fuzzy-match"]
EVALUATOR = {"parity-match": "match", "parity-includes": "includes", "parity-includes-ignore-case": "includes",
             "parity-fuzzy-match": "fuzzy_match", "parity-closedqa": "model_graded", "parity-fact": "model_graded"}

# ModelBasedClassify (data/parity/graded_samples.jsonl: prompts g1..g7, the model answers A1..A7):
# the grading model's reply for each answer, and the (choice, score) openai/evals draws from it
# (classify_utils.py:113-131, get_choice: lines stripped of punctuation, reversed for
# cot_classify, the first choice a line starts or ends with; :91-104, the score) under the
# closedqa spec (Y/N, scores 1/0) and the fact spec (A-E, no scores).
GRADED = ["parity-closedqa", "parity-fact"]
GRADES = [
    ("The answer meets the criterion.\nY", ("Y", 1.0), ("__invalid__", None)),
    ("No.\nN\nN", ("N", 0.0), ("__invalid__", None)),
    ("Y. Wait\nNo", ("N", 0.0), ("__invalid__", None)),           # the last line first: "No" starts with N
    ("I cannot decide.", ("__invalid__", 0.0), ("__invalid__", None)),  # invalid: the lowest score
    ("Yes", ("Y", 1.0), ("__invalid__", None)),
    ("Reasoning...\n(B)", ("__invalid__", 0.0), ("B", None)),     # "(B)" -> "B"
    ("Both match.\nC", ("__invalid__", 0.0), ("C", None)),
]


def _graded_answer(prompt: str) -> str | None:
    """The policy's answer to g<n>, the grader's scripted reply to a prompt about A<n>."""
    if prompt.startswith("g"):
        return f"A{prompt[1]}"
    found = re.search(r"\[Submission\]: A(\d)", prompt)
    return GRADES[int(found.group(1)) - 1][0] if found else None


def _import(out: Path, registry: Path) -> None:
    """The parity evals of ``registry`` (conftest.py's parity_registry: with the wheel's model-graded specs)."""
    imported = import_registry_file(registry / "evals" / "parity.yaml")
    assert [found.name for found in imported] == EVALS + GRADED
    assert all(all("not computed" in u.text() for u in found.report.findings)
               for found in imported if found.name in EVALS)
    write_imports(out, imported, lambda folder: check_loads(folder, {"OPENAI_API_KEY": "x"}))


def _verdicts(eval_path: Path, env: dict[str, str]) -> dict[int, bool]:
    return {index: result["passed"] for index, result in _results(eval_path, env).items()}


def _results(eval_path: Path, env: dict[str, str]) -> dict[int, dict]:
    results = run_imported(eval_path, env)
    spec = load_eval(eval_path, settings=Settings.from_environment({**os.environ, **env}))
    assert {r["evaluator"] for r in results.values()} == {EVALUATOR[spec.config.metadata["registry_eval"]]}
    return results


@pytest.mark.integration
def test_every_grader_gives_openai_evals_verdicts_on_the_same_answers(parity_registry, tmp_path):
    out = tmp_path / "imported"
    _import(out, parity_registry)
    with ScriptedChatServer({prompt: answer for prompt, answer, _ in SCRIPT}) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
        for column, name in enumerate(EVALS):
            expected = {index: verdicts[column] for index, (_, _, verdicts) in enumerate(SCRIPT)
                        if verdicts[column] is not None}
            assert _verdicts(out / name / "eval.yaml", env) == expected, name
        requests = server.requests
    assert len(requests) == len(SCRIPT) * len(EVALS) - 1
    assert {r.authorization for r in requests} == {f"Bearer {KEY}"}
    # The evals ran one after the other: their requests in that order.
    bodies = {name: [r.body for r in requests[i * len(SCRIPT):(i + 1) * len(SCRIPT)]] for i, name in enumerate(EVALS)}
    # What each grader sends besides the model and the messages.
    sent = {name: {k: v for k, v in body[0].items() if k not in ("model", "messages")} for name, body in bodies.items()}
    assert sent == {"parity-match": {"temperature": 0.0}, "parity-includes": {}, "parity-includes-ignore-case": {},
                    "parity-fuzzy-match": {"temperature": 0.0, "max_tokens": 100}}
    # Cells run concurrently: requests are found by their prompt, not by their order.
    match = {body["messages"][-1]["content"]: body for body in bodies["parity-match"]}
    assert match["q1"]["messages"] == [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "q1"}]
    assert match["q13 asked as a text prompt"]["messages"] == [{"role": "system", "content": "q13 asked as a text prompt"}]
    assert {body["model"] for body in match.values()} == {"gpt-4o-mini"}
    # The key went to the server only: no file of the imported evals or of their runs holds it.
    assert [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()] == []


@pytest.mark.integration
@pytest.mark.skipif(oaieval_path() is None, reason=OAIEVAL_MISSING)
def test_oaieval_on_the_same_server_gives_the_same_verdicts(parity_registry, tmp_path):
    out = tmp_path / "imported"
    _import(out, parity_registry)
    # oaieval's own registry holds evals of these names' neighbours: a registry of the parity evals only.
    registry = tmp_path / "oai_registry"
    (registry / "evals").mkdir(parents=True)
    shutil.copy(REGISTRY / "evals" / "parity.yaml", registry / "evals")
    shutil.copytree(REGISTRY / "data" / "parity", registry / "data" / "parity")
    oaieval = oaieval_path()
    assert oaieval is not None
    basic = {prompt: answer for prompt, answer, _ in SCRIPT}
    with ScriptedChatServer(lambda prompt: basic.get(prompt) or _graded_answer(prompt)) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
        for name in EVALS + GRADED:
            record = tmp_path / f"{name}.jsonl"
            # gpt-3.5-turbo: a name oaieval knows as a chat model; the server answers any model alike.
            proc = subprocess.run([oaieval, "gpt-3.5-turbo", name, "--registry_path", str(registry),
                                   "--record_path", str(record)], env={**os.environ, **env}, cwd=tmp_path,
                                  capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, proc.stderr[-2000:]
            events = [json.loads(line) for line in record.read_text().splitlines()]
            if name in GRADED:
                # ModelBasedClassify records a choice and a score per sample (classify.py:91-95).
                drawn = {int(e["sample_id"].rsplit(".", 1)[1]): (e["data"]["choice"], e["data"]["score"])
                         for e in events if e.get("type") == "metrics"}
                assert len(drawn) == len(GRADES), name
                ours = {i: (r["detail"]["choice"], r["score"]) for i, r in _results(out / name / "eval.yaml", env).items()}
                assert ours == drawn, name
                continue
            theirs = {int(e["sample_id"].rsplit(".", 1)[1]): e["data"]["correct"] for e in events
                      if e.get("type") == "match"}
            assert len(theirs) == len(SCRIPT) - (name == "parity-fuzzy-match"), name
            assert _verdicts(out / name / "eval.yaml", env) == theirs, name


@pytest.mark.integration
def test_model_graded_evals_draw_openai_evals_choices_and_scores(parity_registry, tmp_path):
    out = tmp_path / "imported"
    _import(out, parity_registry)
    with ScriptedChatServer(_graded_answer) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
        for column, name in enumerate(GRADED, start=1):
            results = _results(out / name / "eval.yaml", env)
            drawn = {i: (r["detail"]["choice"], r["score"]) for i, r in results.items()}
            assert drawn == {i: grades[column] for i, grades in enumerate(GRADES)}, name
            # A pass: the choice with the highest score (fact has none: a choice was drawn).
            assert {i: r["passed"] for i, r in results.items()} == (
                {i: g[1][0] == "Y" for i, g in enumerate(GRADES)} if name == "parity-closedqa"
                else {i: g[2][0] != "__invalid__" for i, g in enumerate(GRADES)})
        requests = server.requests
    policy = [r.body for r in requests if r.body["messages"][-1]["content"].startswith("g")]
    grading = [r.body for r in requests if not r.body["messages"][-1]["content"].startswith("g")]
    assert len(policy) == len(grading) == 2 * len(GRADES)
    # classify.py:33-36 and elsuite/utils.py:177-186: both calls send these.
    sent = {"max_tokens": 1024, "temperature": 0, "top_p": 1, "frequency_penalty": 0, "presence_penalty": 0, "n": 1}
    assert all({k: v for k, v in body.items() if k not in ("model", "messages")} == sent for body in policy + grading)
    # The grading prompt is the spec's, filled in (the input as text, its braces doubled by
    # scrub_formatting_from_prompt, utils.py:91-100) with the answer instructions appended.
    closedqa = next(body["messages"] for body in grading
                    if "g6" in body["messages"][0]["content"] and "[Criterion]" in body["messages"][0]["content"])
    assert len(closedqa) == 1 and closedqa[0]["role"] == "user"
    text = closedqa[0]["content"]
    assert "[Task]: Answer briefly.\nUser: g6 {{x}}\n\n***\n[Submission]: A6\n" in text
    assert "[Criterion]: correctness: Is the answer correct?" in text
    fact = next(body["messages"][0]["content"] for body in grading
                if "[Expert]: A2" in body["messages"][0]["content"])
    assert fact.endswith('Then print only a single choice from "A" or "B" or "C" or "D" or "E" (without quotes or '
                         "punctuation) on its own line corresponding to the correct answer. At the end, repeat just "
                         "the answer by itself on a new line.\n\nReasoning:")
