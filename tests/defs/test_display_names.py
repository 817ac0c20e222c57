"""An eval-harness file whose eval or variant name is no partition key still runs: the name is kept
for display, a derived key names its runs, assets and partitions, and loading says so in one line."""

from __future__ import annotations

import re

import dagster as dg

from evalh_pipeline.config.schema import eval_key
from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.evals.names import STAGES, run_id_problem
from evalh_pipeline.defs.launch import materialize_run
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval


def test_an_eval_named_with_spaces_runs_under_a_derived_key(tmp_path, instance):
    path = write_eval(tmp_path / "toy", cases=2, systems="""
  - name: base
    adapter: python_function
    target: stub_agent:run
  - name: agent main
    adapter: python_function
    target: stub_agent:run
""")
    path.write_text(path.read_text().replace("name: toy", "name: 'agent main (v2)'"))

    spec = load_eval(path)

    assert spec.display_name == "agent main (v2)" and spec.name == "agent_main_v2"
    (note,) = [str(w) for w in spec.warnings if "eval.name" in str(w)]
    assert "'agent_main_v2'" in note and "\n" not in note
    run_id = new_run_id(spec.name)
    assert run_id_problem(run_id) == ""
    outcome = materialize_run(spec, run_id, instance=instance)
    assert {v.name for v in outcome.summary.variants} == {"base", "agent main"}
    assert instance.get_dynamic_partitions("agent_main_v2__runs") == [run_id]
    event = instance.get_latest_materialization_event(dg.AssetKey(["agent_main_v2", "summary"]))
    assert event.asset_materialization.partition == run_id


def _display_named_eval(tmp_path):
    path = write_eval(tmp_path / "toy", cases=2)
    path.write_text(path.read_text().replace("name: toy", "name: 'agent main'"))
    return load_eval(path)


def test_the_assets_and_jobs_of_a_display_named_eval_show_its_name(tmp_path):
    spec = _display_named_eval(tmp_path)
    defs, _ = build_definitions([spec])
    graph = defs.resolve_asset_graph()
    keys = [dg.AssetKey(["agent_main", stage]) for stage in (*STAGES, "baseline")]
    for key in keys:
        node = graph.get(key)
        assert node.metadata["eval"] == "agent main" and node.metadata["eval_key"] == "agent_main", key
        assert "agent main (key `agent_main`)" in (node.description or ""), key
    assert {graph.get(k).group_name for k in keys} == {"agent_main"}  # baseline too: the eval is one group
    for job in ("agent_main__run", "agent_main__judge"):
        assert "agent main (key `agent_main`)" in (defs.resolve_job_def(job).description or "")


def test_the_summary_metadata_report_and_cli_table_of_a_display_named_eval_show_its_name(tmp_path, instance, capsys):
    from evalh_pipeline.cli.running import _print_summary

    spec = _display_named_eval(tmp_path)
    run_id = new_run_id(spec.name)
    outcome = materialize_run(spec, run_id, instance=instance)

    event = instance.get_latest_materialization_event(dg.AssetKey(["agent_main", "summary"]))
    assert event.asset_materialization.metadata["eval"].value == "agent main"
    assert outcome.run_dir.report.read_text().splitlines()[0] == f"# agent main — run `{run_id}`"
    _print_summary(outcome.summary, outcome.run_dir, spec.display_name)
    assert f"agent main · run {run_id}" in capsys.readouterr().out


def test_the_viewer_run_page_of_a_display_named_eval_shows_its_name(tmp_path, instance):
    from starlette.testclient import TestClient

    from evalh_pipeline.view.app import create_app

    spec = _display_named_eval(tmp_path)
    run_id = new_run_id(spec.name)
    outcome = materialize_run(spec, run_id, instance=instance)

    page = TestClient(create_app(outcome.run_dir.path.parent), base_url="http://127.0.0.1:8790").get(f"/runs/{run_id}")
    assert page.status_code == 200
    assert ">agent main</a> <span class=\"muted\">(key agent_main)</span>" in page.text


def test_derived_keys_are_valid_run_id_parts():
    for name in ("agent main", "...x", "a|b[c],d", "tab\there", "ünï", "x..y", "-lead"):
        key = eval_key(name)
        assert run_id_problem(f"2026-01-01T00-00-00-000000_{key}") == "", (name, key)
        assert run_id_problem(key) == "", (name, key)
        assert re.fullmatch(r"[A-Za-z0-9_]+", key), (name, key)  # a Dagster group and job name part
    assert eval_key("already_fine_v2") == "already_fine_v2"


def test_an_eval_named_with_a_hyphen_runs_through_the_cli_under_an_underscored_key(tmp_path, env):
    # Dagster's group and job names allow letters, digits and `_` only: `pc-demo` used to fail
    # every `evalh run` after its run folder was made.
    import subprocess

    from tests.support.evalh_process import EVALH

    path = write_eval(tmp_path / "toy", cases=2)
    path.write_text(path.read_text().replace("name: toy", "name: pc-demo.v2"))
    assert eval_key("pc-demo.v2") == "pc_demo_v2"
    done = subprocess.run([*EVALH, "run", str(path)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode in (0, 1), done.stderr  # 1: the toy's own regression gate
    assert "cannot be used" not in done.stderr and "not a valid" not in done.stderr, done.stderr
    (run,) = [p for p in (tmp_path / "toy" / "runs").iterdir() if (p / "summary.yaml").exists()]
    assert run.name.endswith("_pc_demo_v2")
