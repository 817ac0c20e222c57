"""The order of a review queue (`evalh label review` and the viewer's review queue): the
judge's failures, flaky cells, content someone else labelled against the judge, then a seeded
sample of the passes; one question per judged content; labelled content left out."""

from __future__ import annotations

from datetime import datetime, timezone

from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.queries.labelled_cells import JudgedCell
from evalh_pipeline.runner.labelling import queue_order

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _cell(case: str, passed: bool, *, variant: str = "base", sample: int = 0, content: str | None = None) -> JudgedCell:
    return JudgedCell("run", case, variant, sample, "judge", "h1", passed, content or f"{case}/{variant}/{sample}")


def _label(cell: JudgedCell, passed: bool, labeller: str = "ana") -> HumanLabel:
    return HumanLabel(content_hash=cell.content_hash, evaluator=cell.evaluator, evaluator_hash=cell.evaluator_hash,
                      passed=passed, labeller=labeller, labelled_at=NOW, case_id=cell.case_id,
                      variant_name=cell.variant_name, sample=cell.sample, run_id=cell.run_id)


def _names(chosen: list[tuple[JudgedCell, str]]) -> list[tuple[str, int, str]]:
    return [(c.case_id, c.sample, reason) for c, reason in chosen]


def test_failures_then_flaky_then_disagreements_then_sampled_passes():
    failed = _cell("c3", False)
    flaky_fail, flaky_pass = _cell("c1", False, sample=0), _cell("c1", True, sample=1)
    against = _cell("c2", True)  # labelled as a failure by someone else
    agreed = _cell("c4", True)  # labelled, agreeing with the judge: never asked again
    passes = [_cell(f"p{i}", True) for i in range(5)]
    cells = [*passes, agreed, against, flaky_pass, failed, flaky_fail]
    labels = {against.key: _label(against, False, "bo"), agreed.key: _label(agreed, True, "bo")}
    chosen = queue_order(cells, labels, labeller="ana", limit=20, seed=7)
    assert _names(chosen)[:4] == [("c1", 0, "failed"), ("c3", 0, "failed"), ("c1", 1, "flaky"), ("c2", 0, "disagreed")]
    assert sorted(c.case_id for c, _ in chosen[4:]) == [f"p{i}" for i in range(5)]
    assert {reason for _, reason in chosen[4:]} == {"sampled"}
    assert agreed not in [c for c, _ in chosen]


def test_a_reviewers_own_disagreement_is_not_asked_back():
    against = _cell("c2", True)
    labels = {against.key: _label(against, False, "ana")}
    assert queue_order([against], labels, labeller="ana") == []
    assert _names(queue_order([against], labels, labeller="bo")) == [("c2", 0, "disagreed")]


def test_one_question_per_judged_content_and_at_most_limit():
    same = [_cell("c1", False, variant=v, content="same answer") for v in ("base", "candidate")]
    others = [_cell(f"c{i}", False) for i in range(2, 9)]
    chosen = queue_order([*same, *others], {}, limit=5)
    assert len(chosen) == 5
    assert [c.variant_name for c, _ in chosen if c.content_hash == "same answer"] == ["base"]


def test_the_sample_is_seeded_and_labelling_one_cell_does_not_reshuffle_the_rest():
    passes = [_cell(f"p{i:02d}", True) for i in range(30)]
    first = [c.case_id for c, _ in queue_order(passes, {}, limit=30, seed=1)]
    assert first == [c.case_id for c, _ in queue_order(list(reversed(passes)), {}, limit=30, seed=1)]
    assert first != [c.case_id for c, _ in queue_order(passes, {}, limit=30, seed=2)]
    assert first != sorted(first)  # a random sample, not the case order
    done = next(c for c in passes if c.case_id == first[0])
    after = [c.case_id for c, _ in queue_order(passes, {done.key: _label(done, True)}, limit=30, seed=1)]
    assert after == first[1:]
