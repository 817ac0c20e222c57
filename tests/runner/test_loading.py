"""load_eval: plugin entries checked from above config, with the settings the caller hands in."""

import asyncio
import json
import os
from dataclasses import replace

import pytest

from evalh_pipeline.common.settings import Settings
from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.judging import evaluator_context
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval


def test_the_settings_handed_in_decide_runs_cache_and_the_evaluators_env_not_the_process(tmp_path, monkeypatch):
    path = write_eval(tmp_path / "toy")
    path.write_text(path.read_text().replace(f"path: {tmp_path / 'toy' / 'runs'}", "path: runs"))
    monkeypatch.setenv("EVALH_RUNS_DIR", str(tmp_path / "from-process"))
    settings = Settings(env={"ONLY_HERE": "1"}, runs_dir=tmp_path / "handed-in", cache_dir=tmp_path / "cache")

    spec = load_eval(path, settings=settings)

    assert spec.runs_root == str(tmp_path / "handed-in") and spec.settings is settings
    assert evaluator_context(spec).env == {"ONLY_HERE": "1"}
    assert "ONLY_HERE" not in repr(spec)


def test_a_url_output_is_worked_on_in_the_cache_folder_of_the_settings(tmp_path):
    path = write_eval(tmp_path / "toy")
    path.write_text(path.read_text().replace(f"path: {tmp_path / 'toy' / 'runs'}", f"path: file://{tmp_path}/published"))
    settings = replace(Settings.from_environment({}), cache_dir=tmp_path / "cache")

    spec = load_eval(path, settings=settings)

    assert spec.outputs[0] == f"file://{tmp_path}/published"
    assert spec.runs_root.startswith(str(tmp_path / "cache" / "runs"))


def test_an_unknown_plugin_type_is_still_one_line_with_file_line_key_and_allowed_types(tmp_path):
    path = write_eval(tmp_path / "toy", evaluators="""
  - name: odd
    type: no_such_evaluator
""")
    with pytest.raises(ConfigError) as caught:
        load_eval(path, settings=Settings.from_environment({}))
    (line,) = [line for line in str(caught.value).splitlines() if "no_such_evaluator" in line]
    assert line.startswith("eval.yaml:") and "evaluators[0].type" in line and "contains_text" in line



def test_a_system_that_inherits_the_environment_gets_the_settings_one(tmp_path, monkeypatch):
    monkeypatch.setenv("ONLY_HERE", "from the process")
    path = write_eval(tmp_path / "toy", cases=1, systems="""
  - name: base
    adapter: cli
    command: [sh, -c, 'echo "seen: $ONLY_HERE"']
    inherit_env: true
""", evaluators="""
  - name: mentions_paris
    type: contains_text
""")
    settings = replace(Settings.from_environment(), env={**os.environ, "ONLY_HERE": "from the settings"})
    spec = load_eval(path, settings=settings)
    info = prepare_cases(spec, new_run_id(spec.name))

    asyncio.run(produce_traces(spec, info.run_dir))

    (line,) = info.run_dir.traces.read_text().splitlines()
    assert json.loads(line)["output"]["final_answer"].strip() == "seen: from the settings"
