"""Each promptfoo assertion type, imported and run against a loopback echo model, gives the
verdict promptfoo's own source decides (the rows and their citations: tests/support/promptfoo_parity.py)."""

from __future__ import annotations

import shutil

import pytest

from tests.support.openai_chat_server import echo_chat_server
from tests.support.promptfoo_parity import ROWS, run_imported, write_config

pytestmark = pytest.mark.integration


def test_every_assertion_type_gives_promptfoos_verdict(tmp_path, monkeypatch):
    if shutil.which("node") is None:
        pytest.skip("the javascript rows need Node.js (node on PATH); the image has it (Debian nodejs)")
    with echo_chat_server() as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)  # where `similar` embeds, as promptfoo's grader
        results = run_imported(write_config(tmp_path / "pf", base_url), tmp_path / "evalh", monkeypatch)
    verdicts = {f"test-{i + 1}": (a["type"], reply, results[f"test-{i + 1}"]["passed"], results[f"test-{i + 1}"].get("error"))
                for i, (a, reply, _, _) in enumerate(ROWS)}
    expected = {f"test-{i + 1}": (a["type"], reply, want, None) for i, (a, reply, want, _) in enumerate(ROWS)}
    assert verdicts == expected
