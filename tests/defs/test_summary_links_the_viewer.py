"""The summary materialization always links to the run's page in `evalh view` (configured or default address)."""

from __future__ import annotations

import dagster as dg

from evalh_pipeline.common.settings import Settings
from evalh_pipeline.defs.launch import materialize_run
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.store.run_dir import new_run_id
from evalh_pipeline.view.links import VIEWER_URL_ENV
from tests.support.evals import write_eval


def _summary_metadata(instance: dg.DagsterInstance) -> dict:
    event = instance.get_latest_materialization_event(dg.AssetKey(["toy", "summary"]))
    return event.asset_materialization.metadata


def test_summary_links_to_the_configured_viewer(tmp_path, instance):
    settings = Settings.from_environment({VIEWER_URL_ENV: "http://viewer.example:9000/"})
    spec = load_eval(write_eval(tmp_path / "toy", cases=1), settings=settings)
    run_id = new_run_id(spec.name)

    materialize_run(spec, run_id, instance=instance)

    viewer = _summary_metadata(instance)["viewer"]
    assert isinstance(viewer, dg.UrlMetadataValue)
    assert viewer.url == f"http://viewer.example:9000/runs/{run_id}"


def test_summary_links_to_the_default_viewer_without_an_address(tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=1), settings=Settings.from_environment({}))
    run_id = new_run_id(spec.name)

    materialize_run(spec, run_id, instance=instance)

    metadata = _summary_metadata(instance)
    assert metadata["viewer"].url == f"http://127.0.0.1:8790/runs/{run_id}"
    assert metadata["complete"].value is True
