"""Opt-in, side by side: eval-harness 2.0.2's own offline examples through both tools.

Needs the eval-harness sdist unpacked (``EVAL_HARNESS_SDIST``: the folder with
``examples/``; ``pip download --no-deps --no-binary :all: eval-harness==2.0.2``) and its
``evalh`` (``EVAL_HARNESS_EVALH``, installed in a separate venv). Nothing of eval-harness
is committed here: the examples are read from the sdist.

- ``online_eval`` runs unchanged (fixture dataset + replay system).
- ``listing_price`` runs against a loopback stand-in for its agent service; its endpoint's
  port is the only edit, and its ``answer_quality`` judge is left out (it needs a paid API).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.compat.record_reference import read_outcome
from tests.support.evalh_process import run_evalh
from tests.support.http_server import FakeHandler, port_of, serving_handler

SDIST = os.environ.get("EVAL_HARNESS_SDIST")
THEIRS = os.environ.get("EVAL_HARNESS_EVALH")
pytestmark = [pytest.mark.integration, pytest.mark.skipif(
    not (SDIST and THEIRS), reason="set EVAL_HARNESS_SDIST and EVAL_HARNESS_EVALH to run eval-harness side by side")]

LISTINGS = {"ABC123": ("Richmond", 1_350_000, 1_200_000), "XYZ789": ("Brunswick", 1_100_000, 950_000),
            "DEF456": ("Carlton", 1_500_000, 1_450_000)}


def _both(folder: Path, eval_path: str, env: dict) -> tuple[dict, dict]:
    theirs = subprocess.run([THEIRS, "run", eval_path], cwd=folder, env={**env, "PYTHONPATH": str(folder)},
                            capture_output=True, text=True, timeout=600)
    their_run = sorted(p for p in (folder / "runs").iterdir() if p.name != "baselines")[-1]
    ours = run_evalh(["run", eval_path], env, folder, timeout=600)
    assert ours.returncode == 0, ours.stderr
    our_run = [p for p in (folder / "runs").iterdir() if p != their_run and p.name != "baselines"][-1]
    return read_outcome(their_run, theirs.returncode), read_outcome(our_run, ours.returncode)


def test_online_eval_example_gives_the_same_verdicts(tmp_path, env):
    shutil.copytree(Path(SDIST) / "examples", tmp_path / "examples")
    theirs, ours = _both(tmp_path, "examples/online_eval/eval.yaml", env)
    assert ours == theirs and theirs["verdicts"]


class _Agent(FakeHandler):
    """The listing agent the example expects on its endpoint; the experimental variant forgets
    the suburb average for XYZ789."""

    def do_POST(self):
        body = self.body_json()
        listing = re.search(r"[A-Z]{3}\d{3}", body["user_message"]).group(0)
        suburb, price, average = LISTINGS[listing]
        calls = [{"name": "get_listing_details", "arguments": {"listing_id": listing}}]
        if not ("variant=experimental" in self.path and listing == "XYZ789"):
            calls.append({"name": "get_average_suburb_price", "arguments": {"suburb": suburb}})
        self.send_json(200, {"answer": f"{listing} in {suburb}: {price} vs {average} ({body['session_id']})",
                             "tool_calls": calls, "langfuse_trace_id": f"lf_{body['session_id']}"})


def test_listing_price_example_gives_the_same_verdicts_and_regressions(tmp_path, env):
    shutil.copytree(Path(SDIST) / "examples", tmp_path / "examples")
    with serving_handler(_Agent) as url:
        path = tmp_path / "examples" / "listing_price" / "eval.yaml"
        text = path.read_text().replace("http://localhost:8000/chat", f"http://localhost:{port_of(url)}/chat")
        text = re.sub(r"\n  - name: answer_quality\n.*?cost_limit_usd: 0\.05\n", "\n", text, flags=re.S)
        path.write_text(text.replace("    - answer_quality\n", ""))
        theirs, ours = _both(tmp_path, "examples/listing_price/eval.yaml", {**env, "AGENT_API_KEY": "sk-agent-1"})
    assert ours == theirs
    assert theirs["comparison"] == {"agent_experimental": {"regressions": ["listing_price_002"], "improvements": []}}
