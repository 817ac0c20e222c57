"""Issue 39 item 7: a result its judge could not give (``judge_unreachable``) is errored,
not failed: its cell leaves the pass counts, the paired statistics, the regressions and
compare, and is counted instead."""

from __future__ import annotations

import pytest

from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.queries.compare import compare_runs
from tests.queries.support import results_of, summarize_records, toy_run

CELLS = {(f"c{i}", v): (100, None) for i in range(1, 5) for v in ("a", "b")}


def test_cells_not_judged_leave_pass_rate_and_regressions_and_are_counted(tmp_path):
    outcomes = {(f"c{i}", "a"): {"judge": "pass"} for i in range(1, 5)}
    outcomes |= {("c1", "b"): {"judge": "pass"}, ("c2", "b"): {"judge": "fail"},
                 ("c3", "b"): {"judge": "unreachable"}, ("c4", "b"): {"judge": "unreachable"}}

    s = summarize_records(tmp_path, CELLS, results_of(outcomes))

    a, b = s.variants
    assert (b.cases_total, b.cases_passed, b.cases_errored, b.cases_not_judged) == (4, 1, 0, 2)
    assert b.pass_rate == pytest.approx(0.5)  # 1 of the 2 judged cases
    assert a.cases_not_judged == 0 and a.pass_rate == 1.0
    (delta,) = s.comparison.deltas
    assert delta.regressions == ["c2"]  # not c3, c4: nothing was said about them
    assert delta.significance.cases_compared == 2 and delta.significance.cases_worse == 1
    rollup = s.by_evaluator[0].by_variant["b"]
    assert (rollup.errored, rollup.not_judged, rollup.pass_rate) == (2, 2, 0.5)
    assert s.not_judged.results == 2 and s.not_judged.by_evaluator == {"judge": 2}
    assert s.not_judged.describe() == ("2 result(s) could not be judged (the judge was unreachable: judge call to "
                                       "http://127.0.0.1:9/v1/chat/completions failed: ConnectError)")


def test_an_evaluator_that_raised_still_fails_its_cell(tmp_path):
    outcomes = {(f"c{i}", v): {"judge": "pass"} for i in range(1, 5) for v in ("a", "b")}
    outcomes[("c1", "b")] = {"judge": "error"}

    s = summarize_records(tmp_path, CELLS, results_of(outcomes))

    b = s.variants[1]
    assert (b.cases_passed, b.cases_not_judged) == (3, 0) and s.not_judged is None
    assert s.comparison.deltas[0].regressions == ["c1"]


def test_an_evaluator_outside_pass_criteria_not_judged_leaves_the_cell_decided(tmp_path):
    outcomes = {(f"c{i}", v): {"gate": "pass", "extra": "pass"} for i in range(1, 5) for v in ("a", "b")}
    outcomes[("c1", "b")] = {"gate": "fail", "extra": "unreachable"}

    s = summarize_records(tmp_path, CELLS, results_of(outcomes), PassCriteria(all_required=["gate"]))

    b = s.variants[1]
    assert (b.cases_passed, b.cases_not_judged) == (3, 0)
    assert s.comparison.deltas[0].regressions == ["c1"]
    assert s.not_judged.results == 1  # still said: the extra evaluator's verdict is missing


def test_compare_leaves_out_cases_not_judged_in_either_run(tmp_path):
    passing = {(f"c{i}", "a"): {"judge": "pass"} for i in range(1, 5)}
    a = toy_run(tmp_path, "A", {k: v for k, v in CELLS.items() if k[1] == "a"},
             results_of({**passing, ("c4", "a"): {"judge": "unreachable"}}), variants=("a",))
    b = toy_run(tmp_path, "B", {k: v for k, v in CELLS.items() if k[1] == "a"},
             results_of({**passing, ("c2", "a"): {"judge": "unreachable"}, ("c3", "a"): {"judge": "unreachable"}}),
             variants=("a",))

    report = compare_runs(a, b)

    (v,) = report.variants
    assert (v.cases_compared, v.cases_only_in_a, v.cases_only_in_b, v.cases_not_judged) == (1, 0, 0, 3)
    assert report.comparison.regressions_count == 0 and not report.has_regressions
    assert v.b.pass_rate == 1.0 and v.b.cases_not_judged == 2
