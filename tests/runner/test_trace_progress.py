"""The traces stage tells its progress of every cell, in batches rather than once per cell."""

from __future__ import annotations

import asyncio

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import PROGRESS_BATCH, produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import STEADY_SYSTEMS, write_eval


class RecordedProgress:
    """A Progress that keeps what it was told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int | None]] = []

    def start(self, phase: str, total: int | None) -> None:
        self.calls.append(("start", phase, total))

    def advance(self, phase: str, n: int = 1) -> None:
        self.calls.append(("advance", phase, n))

    def finish(self, phase: str) -> None:
        self.calls.append(("finish", phase, None))


def test_every_cell_reaches_the_progress_in_batches_before_it_finishes(tmp_path):
    cases = PROGRESS_BATCH + 10  # two variants: more than two batches of cells
    spec = load_eval(write_eval(tmp_path / "toy", cases=cases, systems=STEADY_SYSTEMS))
    info = prepare_cases(spec, new_run_id(spec.name))
    progress = RecordedProgress()

    stats = asyncio.run(produce_traces(spec, info.run_dir, progress=progress))

    assert stats.cells_run == 2 * cases
    assert progress.calls[0] == ("start", "traces", 2 * cases)
    assert progress.calls[-1] == ("finish", "traces", None)
    advanced = [n for kind, _, n in progress.calls[1:-1] if kind == "advance"]
    assert sum(advanced) == 2 * cases  # the skipped (none) and every cell run, each once
    # Batched: far fewer calls than cells, none larger than a batch.
    assert len([n for n in advanced if n]) < 2 * cases // 2
    assert max(advanced) <= PROGRESS_BATCH
