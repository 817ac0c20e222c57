"""A real Inspect AI log, replayed as a baseline, against a fresh live run: Inspect itself runs a
tiny task (``match()`` and ``includes(ignore_case=False)``) against a loopback
OpenAI-compatible server and writes its ``.eval`` log; `evalh import inspect --model` turns it
into the replay (eval.yaml) and the same samples sent afresh (live.yaml); both run through the
CLI as processes and `evalh compare` gives the paired statistics.

The fresh run's verdicts come from Inspect's scorer definitions mapped to evaluators
(evalh_pipeline/importers/inspect_scorers.py): where the model answers as it did in Inspect's
run, every fresh verdict equals the one Inspect recorded; where the answer changed, it is what
Inspect's ``match_str`` (inspect_ai src/inspect_ai/scorer/_common.py: stripped, case-folded,
edge punctuation out, ``endswith`` for location "end") and ``includes`` (_match.py: the target
in the answer) decide. ``inspect`` comes from ``./dev test`` (ensure_inspect); the test is
skipped, saying so, without it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from tests.support.evalh_process import run_evalh
from tests.support.scripted_chat_server import ScriptedChatServer

pytestmark = pytest.mark.e2e
KEY = "sk-inspect-fresh-run-key-0123456789"
PINNED = Path(__file__).parents[3] / ".venv" / "inspect-ai-0.3.285" / "bin" / "inspect"
MISSING = (f"INSPECT MISSING: inspect_ai's `inspect` is not at {PINNED} nor on PATH, so no real Inspect log is made "
           "(./dev test installs it: ensure_inspect; or set EVALH_INSPECT to its executable)")

TASK = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes, match
from inspect_ai.solver import generate

TARGETS = {"France": "Paris", "Japan": "Tokyo", "Peru": ["Lima", "Lima, Peru"], "Italy": "Rome",
           "Spain": "Madrid", "Egypt": "Cairo", "Kenya": "Nairobi", "Chile": "Santiago"}


@task
def capitals():
    return Task(dataset=[Sample(id=country.lower(), input=f"Capital of {country}?", target=target)
                         for country, target in TARGETS.items()],
                solver=generate(), scorer=[match(), includes(ignore_case=False)])
'''

# The model's answer in Inspect's run and in the fresh one, and the fresh verdicts
# (match, includes) by Inspect's definitions.
ANSWERS = {
    "france": ("It is Paris.", "It is Paris.", (True, True)),
    "japan": ("tokyo", "Tokyo", (True, True)),                  # includes is case-sensitive here
    "peru": ("Quito", "Lima, Peru!", (True, True)),            # either target; "!" stripped
    "italy": ("Rome", "Rome is the capital", (False, True)),    # match is at the end
    "spain": (" madrid...", " madrid...", (True, False)),
    "egypt": ("Cairo, of course", "Cairo, of course", (False, True)),
    "kenya": ("NAIROBI", "nairobi", (True, False)),
    "chile": ("Santiago.", "Santiago.", (True, True)),
}


def _inspect() -> str | None:
    return os.environ.get("EVALH_INSPECT") or (str(PINNED) if PINNED.is_file() else shutil.which("inspect"))


def _new_run(runs: Path, before: set[Path]) -> Path:
    (found,) = [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".") and p not in before]
    return found


def _verdicts(run: Path) -> dict[tuple[str, str], bool]:
    return {(r["case_id"], r["evaluator"]): r["passed"]
            for r in map(json.loads, (run / "results.jsonl").read_text().splitlines())}


def test_a_real_inspect_log_replayed_compares_paired_with_a_fresh_run(tmp_path: Path, env):
    inspect = _inspect()
    if inspect is None:
        warnings.warn(MISSING, stacklevel=1)  # in the warnings summary too, not only among the skips
        pytest.skip(MISSING)
    (tmp_path / "task.py").write_text(TASK)
    by_prompt = {f"Capital of {c}?": sid for c, sid in
                 (("France", "france"), ("Japan", "japan"), ("Peru", "peru"), ("Italy", "italy"),
                  ("Spain", "spain"), ("Egypt", "egypt"), ("Kenya", "kenya"), ("Chile", "chile"))}
    fresh = False

    def answer(prompt: str) -> str | None:
        sid = by_prompt.get(prompt)
        return None if sid is None else ANSWERS[sid][1 if fresh else 0]

    with ScriptedChatServer(answer) as server:
        served = {**env, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
        proc = subprocess.run([inspect, "eval", "task.py", "--model", "openai/gpt-4o-mini", "--log-format", "eval",
                               "--log-dir", "logs", "--display", "plain"],
                              env={**served, "INSPECT_DISPLAY": "plain"}, cwd=tmp_path, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        (log,) = (tmp_path / "logs").glob("*.eval")

        proc = run_evalh(["import", "inspect", str(log), "-o", "capitals", "--model", "gpt-4o-mini"], env, tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "imported capitals: 8 case(s), 0 error(s), 0 note(s)" in proc.stdout
        runs = tmp_path / "runs"
        proc = run_evalh(["run", "capitals/eval.yaml"], env, tmp_path, timeout=600)  # offline: the log replayed
        assert proc.returncode == 0, proc.stdout + proc.stderr
        baseline = _new_run(runs, set())
        fresh = True
        proc = run_evalh(["run", "capitals/live.yaml"], served, tmp_path, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        live = _new_run(runs, {baseline})
        sent = [r.body for r in server.requests]

    recorded, now = _verdicts(baseline), _verdicts(live)
    # Where the model answered as in Inspect's run, the fresh verdicts are the ones Inspect recorded.
    same = [sid for sid, (before, after, _) in ANSWERS.items() if before == after]
    assert {k: v for k, v in now.items() if k[0] in same} == {k: v for k, v in recorded.items() if k[0] in same}
    assert now == {(sid, scorer): verdict[i] for sid, (_, _, verdict) in ANSWERS.items()
                   for i, scorer in enumerate(("match", "includes"))}
    # The fresh run sent what Inspect sent: the sample's conversation, to the model given.
    fresh_bodies = sent[len(ANSWERS):]
    assert sorted(b["messages"][-1]["content"] for b in fresh_bodies) == sorted(by_prompt)
    assert {b["model"] for b in fresh_bodies} == {"gpt-4o-mini"}

    proc = run_evalh(["compare", str(baseline), str(live)], env, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Inspect's run passed france, italy, chile (both scorers); the fresh one france, japan, peru, chile.
    assert "37.5% → 50.0%" in proc.stdout
    assert "1 regression(s), 2 improvement(s)" in proc.stdout
    # McNemar's exact test on three discordant pairs, two one way: p = 1.
    assert "inspect: +12.5 pp" in proc.stdout and "p = 1" in proc.stdout
    assert [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()] == []
