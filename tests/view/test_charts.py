"""The viewer's server-drawn charts: a variant's pass rate over runs (tests/view/test_pages.py has the pages)."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.testclient import TestClient

from evalh_pipeline.view.app import create_app
from evalh_pipeline.view.charts import RATE_HEIGHT, RATE_WIDTH, rate_chart
from tests.view.support import write_run

HOSTILE_VARIANT = '"><script>window.__pwned = 1</script>'


def test_each_variant_is_a_line_over_the_runs_oldest_first():
    chart = rate_chart(["r1", "r2", "r3"], {(0, "a"): (4, 4), (1, "a"): (4, 2), (2, "a"): (4, 0), (2, "b"): (2, 1)},
                       ["a", "b"])
    assert chart is not None
    a, b = chart.lines
    assert [m.run_id for m in a.marks] == ["r1", "r2", "r3"] and [m.rate for m in a.marks] == [1.0, 0.5, 0.0]
    xs, ys = [m.x for m in a.marks], [m.y for m in a.marks]
    assert xs == sorted(xs) and 0 < xs[0] and xs[-1] < RATE_WIDTH  # oldest on the left, inside the box
    assert ys == sorted(ys) and 0 < ys[0] and ys[-1] < RATE_HEIGHT  # a falling rate goes down the box
    # A variant missing from a run joins the runs it has.
    assert [m.run_id for m in b.marks] == ["r3"] and b.marks[0].y == (a.marks[0].y + a.marks[2].y) / 2
    assert a.colour != b.colour


def test_no_chart_without_a_rate():
    assert rate_chart(["r1"], {(0, "a"): (0, 0)}, ["a"]) is None


def test_the_history_draws_the_chart_with_variant_names_as_text(tmp_path: Path):
    runs = tmp_path / "runs"
    for day, failing in ((1, ()), (2, (("c1", HOSTILE_VARIANT),))):
        run_dir = write_run(runs, f"2026-01-0{day}T00-00-00-000000_trend",
                            {"c1": {"main": "x", HOSTILE_VARIANT: "y"}, "c2": {"main": "x", HOSTILE_VARIANT: "y"}},
                            eval_name="trend", failing=failing)
        meta = json.loads((run_dir / "run.json").read_text())
        (run_dir / "run.json").write_text(json.dumps({**meta, "created_at": f"2026-01-0{day}T00:00:00Z"}))
    html = TestClient(create_app(runs), base_url="http://127.0.0.1:8790").get("/evals/trend").text
    figure = html[html.index('<figure class="rate-chart">'):html.index("</figure>")]
    assert figure.count("<polyline") == 2 and figure.count("<circle") == 4
    assert "<script" not in figure and "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in figure
    assert "2026-01-02T00-00-00-000000_trend: 50.0% (1/2)" in figure
