"""Every viewer page of a run links back to the Dagster UI: the runs that made it, its partition, its checks."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evalh_pipeline.view.app import create_app
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.store.stage_runs import record_stage_run
from tests.view.support import eval_harness_run, hostile_run

DAGSTER = "http://dagster.example:3100"
RUN = "2026-06-01T00-00-00-000000_hostile"
AT = datetime(2026, 6, 1, tzinfo=timezone.utc)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    run_dir = RunDirectory(hostile_run(folder, RUN))
    for stage in ("cases", "traces", "results", "summary", "drift"):
        record_stage_run(run_dir, stage, "aaaaaaaa-1111-2222-3333-444444444444", "hostile__run", now=AT)
    for stage in ("results", "summary", "drift"):  # re-judged later
        record_stage_run(run_dir, stage, "bbbbbbbb-1111-2222-3333-444444444444", "hostile__judge", now=AT)
    eval_harness_run(folder, "2026-05-01T10-00-00_regressions")
    return folder


def _links(html: str) -> dict[str, str]:
    """The Dagster links of a page: text → href (the HTML-escaped ``&`` read back)."""
    block = re.search(r'<p class="small muted dagster-links">(.*?)</p>', html, re.S)
    assert block, html[:2000]
    return {text: href.replace("&amp;", "&") for href, text in re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', block[1])}


@pytest.mark.parametrize("path", [f"/runs/{RUN}", f"/runs/{RUN}/cases/script",
                                  f"/runs/{RUN}/variants?a=main&b=%3Cimg%20src%3Dx%20onerror%3Dalert(6)%3E"])
def test_each_page_of_a_run_links_its_dagster_runs_partition_and_checks(runs, path):
    client = TestClient(create_app(runs, dagster_url=DAGSTER + "/"), base_url="http://127.0.0.1:8790")
    page = client.get(path)
    assert page.status_code == 200, page.text[:500]
    assert _links(page.text) == {
        "run aaaaaaaa": f"{DAGSTER}/runs/aaaaaaaa-1111-2222-3333-444444444444",
        "run bbbbbbbb": f"{DAGSTER}/runs/bbbbbbbb-1111-2222-3333-444444444444",
        "partition": f"{DAGSTER}/assets/hostile/summary?view=partitions&partition={RUN}",
        "checks": f"{DAGSTER}/assets/hostile/summary?view=checks",
        "all runs of the partition": f"{DAGSTER}/runs?q%5B0%5D=tag%3Adagster%2Fpartition%3D{RUN}",
    }
    assert 'title="the Dagster run (hostile__judge) that made results, summary, drift"' in page.text


def test_the_links_default_to_dev_uis_dagster_and_a_run_without_a_record_still_has_its_partition(tmp_path):
    folder = tmp_path / "runs"
    hostile_run(folder, RUN)
    page = TestClient(create_app(folder), base_url="http://127.0.0.1:8790").get(f"/runs/{RUN}")
    links = _links(page.text)
    assert set(links) == {"partition", "checks", "all runs of the partition"}
    assert links["partition"].startswith("http://127.0.0.1:3000/assets/hostile/summary?")


def test_an_eval_harness_run_was_never_a_partition_and_has_no_dagster_links(runs):
    page = TestClient(create_app(runs), base_url="http://127.0.0.1:8790").get("/runs/2026-05-01T10-00-00_regressions")
    assert page.status_code == 200
    assert "dagster-links" not in page.text
