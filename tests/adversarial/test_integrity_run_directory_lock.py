"""Item 6: writers of one run directory exclude each other: ``re-evaluate`` (or
``retry-failed``) while ``run --resume`` writes the same run is refused, not interleaved."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.support.evalh_process import EVALH, run_evalh

from tests.support.evals import STEADY_SYSTEMS, write_eval

# The resume's cells from case_2 on wait for the gate: it still holds the run while the
# other commands are refused, however slow the machine is.
HELD = STEADY_SYSTEMS.replace("target: stub_agent:run", "target: stub_agent:run\n    hold_from: 2")


@pytest.mark.e2e
def test_reevaluate_during_resume_is_refused(tmp_path: Path, env: dict[str, str]) -> None:
    path = write_eval(tmp_path / "busy", cases=8)
    assert run_evalh(["run", str(path)], env, tmp_path).returncode == 0
    (run_dir,) = [p for p in (path.parent / "runs").iterdir() if not p.name.startswith(".")]
    # A killed run: no trace survived. Its resume waits for the gate.
    (run_dir / "traces.jsonl").write_text("")
    write_eval(path.parent, cases=8, systems=HELD)
    env = {**env, "EVALH_TEST_GATE": str(tmp_path / "gate")}
    resume = subprocess.Popen([*EVALH, "run", str(path), "--resume", str(run_dir), "--max-concurrency", "1"],
                              env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (run_dir / ".lock.owner").exists():  # the resume holds the run directory
            assert resume.poll() is None and time.monotonic() < deadline, resume.communicate()
            time.sleep(0.1)
        for args in (["re-evaluate", str(run_dir)], ["retry-failed", str(run_dir)]):
            refused = run_evalh(args, env, tmp_path)
            assert refused.returncode == 2, refused.stdout + refused.stderr
            assert "being written by another process" in refused.stderr and "run --resume" in refused.stderr
        (tmp_path / "gate").touch()
        out, errors = resume.communicate(timeout=300)
        assert resume.returncode == 0, out + errors
    finally:
        if resume.poll() is None:
            resume.kill()
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    assert [v["cases_total"] for v in summary["variants"]] == [8, 8]
    assert len((run_dir / "traces.jsonl").read_text().splitlines()) == 16
    # Once the resume is done, the run is free again.
    assert run_evalh(["re-evaluate", str(run_dir)], env, tmp_path).returncode == 0
