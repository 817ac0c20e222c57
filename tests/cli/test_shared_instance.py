"""Two `evalh` commands started together on a new Dagster home (two CI jobs, two terminals):
both open it, neither fails creating its storage."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.evalh_process import EVALH

from tests.support.evals import write_eval

pytestmark = pytest.mark.e2e


def test_two_runs_on_a_new_dagster_home_both_succeed(tmp_path: Path, env: dict[str, str]) -> None:
    for attempt in range(3):  # the race was lost about three times in four
        home = tmp_path / f"home{attempt}"
        home.mkdir()  # no storage yet
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        paths = [write_eval(tmp_path / f"eval_{attempt}_{i}", cases=2) for i in range(2)]
        procs = [subprocess.Popen([*EVALH, "run", str(p)], env={**env, "DAGSTER_HOME": str(home)}, cwd=tmp_path,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in paths]
        for proc in procs:
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, out + err
            assert "already exists" not in err
