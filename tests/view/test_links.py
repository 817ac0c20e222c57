"""The viewer URL other layers link to (the Dagster summary's MetadataValue.url, `evalh run`)."""

from __future__ import annotations

import threading

import pytest

from evalh_pipeline.view.catalog import wilson_interval
from evalh_pipeline.view.links import (
    DEFAULT_PORT,
    run_page_url,
    running_viewer_run_url,
    viewer_base_url,
    viewer_is_running,
)
from tests.support.http_server import FakeHandler, serving_handler


def test_a_run_page_url_defaults_to_loopback_and_follows_the_configured_address():
    assert run_page_url("2026-01-01T00-00-00-000000_quickstart") == (
        f"http://127.0.0.1:{DEFAULT_PORT}/runs/2026-01-01T00-00-00-000000_quickstart")
    assert run_page_url("r1", "https://evals.example/viewer/") == "https://evals.example/viewer/runs/r1"
    assert run_page_url("r1", None, port=9000) == "http://127.0.0.1:9000/runs/r1"
    assert viewer_base_url("  ") == f"http://127.0.0.1:{DEFAULT_PORT}"


def test_a_run_id_is_one_path_segment_of_the_url():
    assert run_page_url("a/../b?c#d") == f"http://127.0.0.1:{DEFAULT_PORT}/runs/a%2F..%2Fb%3Fc%23d"


def test_only_an_evalh_viewer_counts_as_running():
    class Other(FakeHandler):
        def do_GET(self):
            self.send_bytes(200, b"something else", content_type="text/plain")

    with serving_handler(Other) as url:
        assert not viewer_is_running(url, timeout_s=5)
        assert running_viewer_run_url("r1", url, timeout_s=5) is None
    assert not viewer_is_running(url, timeout_s=5)


def test_the_pass_rate_interval_is_wilsons():
    low, high = wilson_interval(7, 7)
    assert round(low, 3) == 0.646 and high == 1.0
    low, high = wilson_interval(4, 7)
    assert (round(low, 3), round(high, 3)) == (0.25, 0.842)
    assert wilson_interval(0, 0) is None


@pytest.mark.integration  # serves the viewer (uvicorn, in a thread)
def test_a_running_viewer_gets_the_runs_url(tmp_path):
    import uvicorn

    from evalh_pipeline.view.app import create_app

    (tmp_path / "runs").mkdir()
    config = uvicorn.Config(create_app(tmp_path / "runs"), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            thread.join(0.05)
            assert thread.is_alive()
        port = server.servers[0].sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        assert viewer_is_running(base, timeout_s=5)
        assert running_viewer_run_url("2026-01-01_x", base, timeout_s=5) == f"{base}/runs/2026-01-01_x"
    finally:
        server.should_exit = True
        thread.join()
