"""Lineage: every run records its fixture fingerprint, and every materialization shows it."""

from __future__ import annotations

import json
import subprocess

import dagster as dg

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.defs.launch import materialize_promotion, materialize_run
from evalh_pipeline.store.fixtures import file_sha256
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import STEADY_SYSTEMS, write_eval



def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          timeout=30).stdout.strip()


def test_a_run_records_the_fixture_commit_and_every_asset_shows_it(tmp_path, instance):
    folder = tmp_path / "toy"
    path = write_eval(folder, cases=3, systems=STEADY_SYSTEMS)
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"],
                 ["config", "commit.gpgsign", "false"], ["add", "-A"], ["commit", "-q", "-m", "fixtures"]):
        _git(folder, *args)
    head = _git(folder, "rev-parse", "HEAD")
    spec = load_eval(path)

    outcome = materialize_run(spec, new_run_id("toy"), instance=instance)

    meta = json.loads(outcome.run_dir.meta.read_text())
    dataset_hash = file_sha256(spec.dataset_path)
    fixtures = meta["fixtures"]
    assert (fixtures["dataset_hash"], fixtures["commit"], fixtures["status"]) == (dataset_hash, head, "tracked")
    blob = _git(folder, "rev-parse", "HEAD:cases.jsonl")
    assert fixtures["paths"]["cases.jsonl"] == f"git:{blob}"
    for asset in ("cases", "traces", "results", "summary", "drift"):
        event = instance.get_latest_materialization_event(dg.AssetKey(["toy", asset]))
        metadata = event.asset_materialization.metadata
        assert metadata["fixture_commit"].value == head, asset
        assert metadata["fixture_status"].value == "tracked", asset
        assert metadata["fixture_dataset_sha256"].value == dataset_hash, asset
        assert "fixture_workspace" not in metadata

    materialize_promotion(spec, outcome.run_dir.run_id, instance=instance)
    baseline = instance.get_latest_materialization_event(dg.AssetKey(["toy", "baseline"])).asset_materialization
    assert baseline.metadata["fixture_commit"].value == head
    assert baseline.metadata["run_dir"].value == str(outcome.run_dir.path)


def test_a_modified_dataset_records_no_commit_but_its_content_hash(tmp_path, instance):
    folder = tmp_path / "toy"
    path = write_eval(folder, cases=3, systems=STEADY_SYSTEMS)
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"],
                 ["config", "commit.gpgsign", "false"], ["add", "-A"], ["commit", "-q", "-m", "fixtures"]):
        _git(folder, *args)
    (folder / "cases.jsonl").write_text((folder / "cases.jsonl").read_text() + "\n")
    spec = load_eval(path)

    outcome = materialize_run(spec, new_run_id("toy"), instance=instance)

    fixtures = json.loads(outcome.run_dir.meta.read_text())["fixtures"]
    assert (fixtures["status"], fixtures["commit"]) == ("modified", "")
    assert fixtures["paths"]["cases.jsonl"] == f"sha256:{file_sha256(spec.dataset_path)}"
    metadata = instance.get_latest_materialization_event(dg.AssetKey(["toy", "traces"])).asset_materialization.metadata
    assert "fixture_commit" not in metadata
    assert metadata["fixture_status"].value == "modified"


def test_outside_git_lineage_says_untracked(tmp_path, instance, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    spec = load_eval(write_eval(tmp_path / "toy", cases=2, systems=STEADY_SYSTEMS))
    materialize_run(spec, new_run_id("toy"), instance=instance)
    metadata = instance.get_latest_materialization_event(dg.AssetKey(["toy", "traces"])).asset_materialization.metadata
    assert metadata["fixture_status"].value == "untracked" and "fixture_commit" not in metadata
