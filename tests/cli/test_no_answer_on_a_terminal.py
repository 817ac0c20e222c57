"""On a terminal, a run in which no system answered says so first: its cause is the first
line after the progress bars, never a table of 0% pass rates with the cause last."""

from __future__ import annotations

import pytest

from tests.support.evalh_process import EVALH

from tests.support.evals import STEADY_SYSTEMS, write_eval
from tests.support.pty_terminal import HIDE_CURSOR, run_on_terminal

pytestmark = pytest.mark.integration


def test_a_misspelt_target_fails_the_run_with_the_cause_first(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=3, systems=STEADY_SYSTEMS.replace("stub_agent", "stub_agnet"))
    session = run_on_terminal([*EVALH, "run", str(path)], env=env, cwd=tmp_path)
    assert session.returncode == 1, session.text  # a system that cannot start: a config error
    assert HIDE_CURSOR in session.raw and session.cursor_left_visible
    lines = [line.strip() for line in session.text.splitlines() if line.strip()]
    after_bars = lines[max(i for i, line in enumerate(lines) if line.startswith("traces")) + 1:]
    assert after_bars[0].startswith("error: config_error: cannot import module 'stub_agnet' for target "
                                    "'stub_agnet:run'"), session.text
    assert after_bars[0].endswith("(every cell; no system answered any of the 6 cells of this run)")
    assert after_bars[1].startswith("the run failed: no system answered. Every trace is kept (toy/runs/")
    assert "evalh retry-failed toy/runs/" in after_bars[1]
    assert "pass rate" not in session.text and "results" not in session.text  # no judging, no table
