"""A summary pools the labels of every run's content while reading the labels once and, for
content the run does not have, only the results of the run each label was given on."""

from __future__ import annotations

from evalh_pipeline.queries.calibration import run_calibration
from evalh_pipeline.queries.labelled_cells import judged_cells
from tests.support.judged_run import judged_run, label_every_cell


def _answers(take: str) -> dict[str, str]:
    return {f"case_{i}": f"answer {i} Paris, {take}" for i in range(12)}


def test_labels_of_other_runs_content_count_from_their_results_alone(tmp_path):
    _, old = judged_run(tmp_path / "toy", "old", cases=12, answers=_answers("first take"))
    _, new = judged_run(tmp_path / "toy", "new", cases=12, answers=_answers("second take"))
    runs = new.path.parent
    labelled = label_every_cell(old, "toy", "mentions_paris", failed_too=2)
    # The old run's content is not the new run's: its labels reach the new summary only through
    # the old run's verdicts, read from its results (its traces are not needed any more).
    assert not {c.key for c in judged_cells(old)} & {c.key for c in judged_cells(new)}
    old.traces.unlink()
    found = run_calibration(new, runs, "toy", "base")
    assert set(found) == {"mentions_paris"}
    calibration = found["mentions_paris"].calibration
    assert calibration.labels == labelled == 16
    assert calibration.agreement == 14 / 16  # two of the judge's passes labelled failures
    variants = found["mentions_paris"].by_variant
    assert (variants["base"].judged, variants["candidate"].judged) == (12, 12)
    assert variants["base"].delta is None and variants["candidate"].delta is not None


def test_an_eval_without_labels_has_no_calibration(tmp_path):
    _, run = judged_run(tmp_path / "toy", "only", cases=3)
    assert run_calibration(run, run.path.parent, "toy", "base") == {}
