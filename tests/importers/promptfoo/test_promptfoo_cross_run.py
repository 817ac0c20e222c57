"""promptfoo itself and the imported eval, run on the same loopback echo model, give the same
verdict for every parity row (skipped where promptfoo is not installed)."""

from __future__ import annotations


import pytest

from tests.support.openai_chat_server import echo_chat_server
from tests.support.promptfoo_parity import (
    ROWS,
    required_promptfoo,
    run_imported,
    run_promptfoo,
    write_config,
)

pytestmark = pytest.mark.integration


def test_promptfoo_and_the_imported_eval_agree_on_every_row(tmp_path, monkeypatch):
    command = required_promptfoo()
    with echo_chat_server() as base_url:
        config = write_config(tmp_path / "pf", base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)  # promptfoo's embedding grader (`similar`)
        rows = run_promptfoo(command, config, base_url, tmp_path)
        ours = run_imported(config, tmp_path / "evalh", monkeypatch)
    theirs = {r["testIdx"]: r["gradingResult"]["componentResults"][0]["pass"] for r in rows}
    assert len(theirs) == len(ROWS)
    pairs = {ROWS[i][0]["type"] + f" #{i}": (theirs[i], ours[f"test-{i + 1}"]["passed"]) for i in range(len(ROWS))}
    assert {k: v for k, v in pairs.items() if v[0] != v[1]} == {}
    # And both agree with the verdicts the fixtures cite from promptfoo's source.
    assert [theirs[i] for i in range(len(ROWS))] == [want for _, _, want, _ in ROWS]
