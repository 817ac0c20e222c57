"""Item 5: a run with no cells (empty dataset, a --filter that matches nothing) fails the gates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.evalh_process import run_evalh

from tests.support.evals import write_eval


def _only_run(folder: Path) -> Path:
    (run_dir,) = [p for p in (folder / "runs").iterdir() if not p.name.startswith(".") and p.name != "baselines"]
    return run_dir


@pytest.mark.e2e
def test_a_filter_matching_nothing_fails_the_gates_and_drift(tmp_path: Path, env: dict[str, str]) -> None:
    path = write_eval(tmp_path / "empty", cases=4, extra_yaml="gates: {pass_rate_floor: 0.5}\n")
    full = run_evalh(["run", str(path)], env, tmp_path)
    assert full.returncode == 0, full.stderr
    baseline = _only_run(path.parent)
    assert run_evalh(["promote", str(baseline)], env, tmp_path).returncode == 0

    empty = run_evalh(["run", str(path), "--filter", "group=nowhere"], env, tmp_path)
    assert empty.returncode == 0, empty.stderr  # the run completed; its gates did not pass
    assert "gate failed" in empty.stdout and "pass_rate_floor" in empty.stdout
    run_dir = next(p for p in (path.parent / "runs").iterdir()
                   if p.name not in (baseline.name, "baselines") and not p.name.startswith("."))

    gate = run_evalh(["drift", str(run_dir), "--exit-nonzero-on-regression"], env, tmp_path)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "no cells" in gate.stderr
    compared = run_evalh(["compare", str(baseline), str(run_dir), "--exit-nonzero-on-regression"], env, tmp_path)
    assert compared.returncode == 1
    # Without the gate flag, reading an empty run is fine.
    assert run_evalh(["drift", str(run_dir)], env, tmp_path).returncode == 0


@pytest.mark.e2e
def test_an_empty_dataset_fails_the_default_gates(tmp_path: Path, env: dict[str, str]) -> None:
    path = write_eval(tmp_path / "nothing", cases=0)
    done = run_evalh(["run", str(path)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    # baseline_variant is set: its gate (and the drift gate) cannot pass a run that checked nothing.
    assert "gate failed" in done.stdout and "no_regressions_vs_baseline_variant" in done.stdout
