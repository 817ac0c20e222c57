"""openai/evals' own ``oaieval`` and evalh, on entries of openai/evals' own registry (the
pinned ``evals`` wheel), run against the same loopback OpenAI-compatible server, give the same
verdict on every sample: Match, Includes (and ``ignore_case``), FuzzyMatch and
ModelBasedClassify (the ``humor`` spec, chain of thought).

The server's answer to a prompt is a fixed function of the prompt (a sample's ideal as it is,
with a leading space, upper-cased, inside a sentence, or a wrong one; a grading prompt gets one
of several replies), so both tools see the same answers without the test deciding verdicts:
oaieval's own record (``--record_path``: its ``match`` and ``metrics`` events) is the
expectation. ``oaieval`` comes from ``./dev test`` (ensure_oaieval); the test is skipped,
saying so, where it is not installed. MultipleChoice is not run here: oaieval downloads its
questions from the Hugging Face hub (``datasets.load_dataset``), and tests use loopback only.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest

from evalh_pipeline.importers.openai_evals.importer import import_registry_file
from evalh_pipeline.importers.openai_evals.registry import RegistryEval, read_registry
from evalh_pipeline.importers.writing import check_loads, write_imports
from tests.importers.openai_evals.support import run_imported
from tests.support.import_openai_registry import data_files
from tests.support.openai_evals_wheel import OAIEVAL_MISSING, WheelRegistry, oaieval_path
from tests.support.scripted_chat_server import ScriptedChatServer

pytestmark = pytest.mark.integration
KEY = "sk-side-by-side-key-0123456789"

# (registry file, eval): a handful of the registry's own entries, one per mapped grader path.
ENTRIES = [
    ("test-basic.yaml", "test-includes"),
    ("test-basic.yaml", "test-includes-ignore-case"),
    ("test-basic.yaml", "test-fuzzy-match"),
    ("rock-climbing.yaml", "rock-climbing"),          # Match
    ("crontab.yaml", "crontab"),                      # Match
    ("test-modelgraded.yaml", "joke-fruits"),         # ModelBasedClassify, humor, cot_classify
]
GRADER_REPLIES = ["Funny enough.\nYes", "No", "Unsure", "Yes. Wait\nNo", "I cannot tell.", "(No)"]


def _pick(text: str, n: int) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % n


def _last_content(sample: dict[str, Any]) -> str:
    given = sample["input"]
    return given if isinstance(given, str) else given[-1]["content"]


def _script(samples: list[dict[str, Any]]):
    """The model: a sample's prompt gets a variant of its ideal; any other prompt (a grading
    one) one of GRADER_REPLIES; both chosen by the prompt's hash."""
    ideals = {}
    for sample in samples:
        ideal = sample.get("ideal")
        ideals[_last_content(sample)] = (ideal[0] if isinstance(ideal, list) and ideal else ideal) or None

    def answer(prompt: str) -> str:
        if prompt not in ideals:
            return GRADER_REPLIES[_pick(prompt, len(GRADER_REPLIES))]
        ideal = ideals[prompt]
        if ideal is None:
            return f"A line about fruit number {_pick(prompt, 100)}."
        forms = [ideal, f" {ideal}", ideal.upper(), f"I think it is {ideal}.", "I do not know."]
        return forms[_pick(prompt, len(forms))]

    return answer


def _oaieval_verdicts(oaieval: str, name: str, env: dict[str, str], cwd: Path) -> dict[int, Any]:
    record = cwd / f"{name}.oaieval.jsonl"
    # gpt-3.5-turbo: a name oaieval knows as a chat model; the server answers any model alike.
    proc = subprocess.run([oaieval, "gpt-3.5-turbo", name, "--record_path", str(record)],
                          env={**os.environ, **env}, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [json.loads(line) for line in record.read_text().splitlines()]
    # Match, Includes and FuzzyMatch record a `match` event per sample (evals/api.py:79-92);
    # ModelBasedClassify a `metrics` event with the choice and score (classify.py:91-95).
    graded = [e for e in events if e.get("type") == "metrics" and "choice" in e.get("data", {})]
    if graded:
        return {int(e["sample_id"].rsplit(".", 1)[1]): (e["data"]["choice"], e["data"]["score"]) for e in graded}
    return {int(e["sample_id"].rsplit(".", 1)[1]): e["data"]["correct"] for e in events if e.get("type") == "match"}


def _entry(registry: WheelRegistry, file: str, name: str) -> tuple[RegistryEval, list[dict[str, Any]]]:
    """The registry's entry and its samples (its data files extracted from the wheel)."""
    (found,) = [e for e in read_registry(registry.evals(file)) if e.name == name]
    files = data_files(found)
    registry.data(*files)
    rows = [json.loads(line) for relative in files
            for line in (registry.root / "data" / relative).read_text().splitlines() if line.strip()]
    return found, rows


def test_oaieval_and_evalh_agree_on_every_sample_of_registry_entries(wheel_registry: WheelRegistry, tmp_path):
    oaieval = oaieval_path()
    if oaieval is None:
        warnings.warn(OAIEVAL_MISSING, stacklevel=1)  # in the warnings summary too, not only among the skips
        pytest.skip(OAIEVAL_MISSING)
    imported, samples = [], []
    for file, name in ENTRIES:
        found, rows = _entry(wheel_registry, file, name)
        samples += rows
        (one,) = import_registry_file(found.file, only=name)
        assert one.report.errors == [], [u.text() for u in one.report.errors]
        imported.append(one)
    write_imports(tmp_path / "imported", imported, lambda folder: check_loads(folder, {"OPENAI_API_KEY": "x"}))
    compared, outcomes = 0, set()
    with ScriptedChatServer(_script(samples)) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
        for (_, name), one in zip(ENTRIES, imported):
            theirs = _oaieval_verdicts(oaieval, name, env, tmp_path)
            graded = name == "joke-fruits"
            results = run_imported(tmp_path / "imported" / one.name / "eval.yaml", env)
            ours = {i: (r["detail"]["choice"], r["score"]) if graded else r["passed"] for i, r in results.items()}
            assert ours == theirs, name
            compared += len(theirs)
            outcomes |= {(graded, v) for v in theirs.values()}
    # Both verdicts occur on the basic graders, several choices on the graded one: the
    # comparison is not over a single outcome.
    assert compared >= 40
    assert {(False, True), (False, False)} <= outcomes and len({v for g, v in outcomes if g}) >= 3
    assert [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()] == []
