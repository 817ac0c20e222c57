"""promptfoo itself and the imported eval, run on the same loopback echo model, give the same
verdict for every parity row (skipped where promptfoo is not installed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from tests.support.openai_chat_server import echo_chat_server
from tests.support.promptfoo_parity import ROWS, run_imported, write_config

pytestmark = pytest.mark.integration


# `./dev test` installs this version here when npm is on the machine (ensure_promptfoo in ./dev).
PINNED = Path(__file__).parents[3] / ".venv" / "promptfoo-0.121.20" / "node_modules" / ".bin" / "promptfoo"


def promptfoo_command() -> list[str] | None:
    """``$EVALH_PROMPTFOO`` (the path of a promptfoo executable), the pinned promptfoo
    ``./dev test`` installs, or ``promptfoo`` on PATH."""
    found = os.environ.get("EVALH_PROMPTFOO") or (str(PINNED) if PINNED.is_file() else shutil.which("promptfoo"))
    return [found] if found else None


def test_promptfoo_and_the_imported_eval_agree_on_every_row(tmp_path, monkeypatch):
    command = promptfoo_command()
    if command is None or shutil.which("node") is None:
        why = ("PROMPTFOO PARITY NOT CHECKED: promptfoo or node is missing (./dev test installs promptfoo 0.121.20 "
               "when node and npm are on the machine; or set EVALH_PROMPTFOO to its executable)")
        warnings.warn(why, stacklevel=1)  # in the warnings summary too, not only among the skips
        pytest.skip(why)
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key", "PROMPTFOO_DISABLE_TELEMETRY": "1",
           "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_CONFIG_DIR": str(tmp_path / "promptfoo-home")}
    with echo_chat_server() as base_url:
        config = write_config(tmp_path / "pf", base_url)
        env["OPENAI_BASE_URL"] = base_url  # promptfoo's embedding grader (`similar`)
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        ran = subprocess.run([*command, "eval", "-c", str(config), "--no-cache", "--no-table", "--no-write",
                              "-o", str(tmp_path / "results.json")], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
        assert (tmp_path / "results.json").exists(), ran.stdout[-2000:] + ran.stderr[-2000:]
        ours = run_imported(config, tmp_path / "evalh", monkeypatch)
    theirs = {r["testIdx"]: r["gradingResult"]["componentResults"][0]["pass"]
              for r in json.loads((tmp_path / "results.json").read_text())["results"]["results"]}
    assert len(theirs) == len(ROWS)
    pairs = {ROWS[i][0]["type"] + f" #{i}": (theirs[i], ours[f"test-{i + 1}"]["passed"]) for i in range(len(ROWS))}
    assert {k: v for k, v in pairs.items() if v[0] != v[1]} == {}
    # And both agree with the verdicts the fixtures cite from promptfoo's source.
    assert [theirs[i] for i in range(len(ROWS))] == [want for _, _, want, _ in ROWS]
