"""The shared benchmark fixture (eval-harness 1.0 format) runs unchanged and agrees with eval-harness.

Expected figures were produced by eval-harness 2.0.2 on the same fixture: agent_a passes
every case, agent_b fails every tenth (its answer names the wrong suburb).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.defs.launch import materialize_run
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.paths import BENCH_FIXTURE


@pytest.fixture
def fixture_eval(tmp_path, monkeypatch):
    subprocess.run([sys.executable, str(BENCH_FIXTURE), str(tmp_path / "fx"), "60", "0"], check=True)
    monkeypatch.syspath_prepend(str(tmp_path / "fx"))
    sys.modules.pop("stub_agent", None)
    yield tmp_path / "fx" / "eval.yaml"
    sys.modules.pop("stub_agent", None)


@pytest.mark.integration
def test_shared_fixture_gives_eval_harness_pass_rates_and_regressions(fixture_eval, tmp_path):
    import dagster as dg

    spec = load_eval(fixture_eval)
    home = tmp_path / "home"
    home.mkdir()
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        summary = materialize_run(spec, new_run_id(spec.name), instance=instance).summary
    assert {v.name: v.pass_rate for v in summary.variants} == {"agent_a": 1.0, "agent_b": 0.9}
    assert summary.comparison.deltas[0].regressions == [f"c{i:06d}" for i in range(0, 60, 10)]
    assert summary.comparison.deltas[0].improvements == []


@pytest.mark.skipif(not os.environ.get("EVAL_HARNESS_EVALH"), reason="set EVAL_HARNESS_EVALH to eval-harness's evalh")
def test_eval_harness_itself_agrees(fixture_eval, tmp_path):
    import yaml

    peer = tmp_path / "peer"
    shutil.copytree(fixture_eval.parent, peer)
    text = (peer / "eval.yaml").read_text().replace(str(fixture_eval.parent), str(peer))
    (peer / "eval.yaml").write_text(text)
    env = {**os.environ, "PYTHONPATH": str(peer)}
    subprocess.run([os.environ["EVAL_HARNESS_EVALH"], "run", str(peer / "eval.yaml")], env=env, check=True,
                   capture_output=True)
    (run_dir,) = (peer / "runs").iterdir()
    theirs = yaml.safe_load((run_dir / "summary.yaml").read_text())
    assert {v["name"]: v["pass_rate"] for v in theirs["variants"]} == {"agent_a": 1.0, "agent_b": 0.9}
    assert theirs["comparison"]["deltas"][0]["regressions"] == [f"c{i:06d}" for i in range(0, 60, 10)]
