"""The run, two-variant and two-run pages show, for a judge with human labels, its calibration
and each variant's corrected pass rate beside the judge's own (the figures run_calibration
gives), and the corrected delta against the baseline variant; a judge without labels is not
listed."""

from __future__ import annotations

from starlette.testclient import TestClient

from evalh_pipeline.queries.calibration import run_calibration
from evalh_pipeline.view.app import create_app
from tests.support.judged_run import judged_run, label_every_cell


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def test_the_run_variants_and_compare_pages_show_the_calibration_and_corrected_rates(tmp_path):
    _, first = judged_run(tmp_path / "toy", "first", cases=12)
    _, second = judged_run(tmp_path / "toy", "second", cases=12)
    runs = first.path.parent
    assert label_every_cell(first, "toy", "mentions_paris") == 16
    found = run_calibration(first, runs, "toy", "base")["mentions_paris"]
    corrected, delta = found.by_variant["candidate"].corrected, found.by_variant["candidate"].delta
    assert corrected is not None and delta is not None
    shown_rate = f"{_pct(corrected.estimate)} <span class=\"muted small\">[{_pct(corrected.ci_low)}, {_pct(corrected.ci_high)}]</span>"
    shown_delta = f"{round(delta.estimate * 100, 1) + 0.0:+.1f} pp"
    client = TestClient(create_app(runs), base_url="http://127.0.0.1:8790")
    pages = {path: client.get(path) for path in ("/runs/first", "/runs/first/variants?a=base&b=candidate",
                                                 "/compare/first/second")}
    for path, response in pages.items():
        assert response.status_code == 200, path
        page = response.text
        assert '<td class="num calibration-labels">16</td>' in page, path
        assert f"<td class=\"num\">{_pct(found.calibration.agreement)}</td>" in page, path
        assert shown_rate in page and shown_delta in page, path
        section = page[page.index("Judge calibration"):]
        section = section[:section.index("</table>", section.index('class="corrected"'))]
        assert "used_lookup" not in section, path  # no labels: not listed
    # The second run has the same answers: the labels apply to it as well, each side says so.
    assert pages["/compare/first/second"].text.count('<td class="num calibration-labels">16</td>') == 2
