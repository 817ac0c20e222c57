"""What a sink is: an ``output[]`` entry that receives the finished run's view.

A trace store copies the run's records after every stage; a sink hears of the run once,
when its summary is written (``evalh run``, ``re-evaluate``, ``retry-failed``), with the
run's drift against the promoted baseline (:class:`~evalh_pipeline.outputs.view.RunView`).
The sync (outputs/sync.py) reads the view once and hands it to every sink; a sink that
fails is journalled in the run's ``publish.jsonl`` like any output, never failing the run.
"""

from __future__ import annotations

from typing import ClassVar

from evalh_pipeline.outputs.stores.base import StoreConfigT, TraceStore
from evalh_pipeline.outputs.view import RunView, read_view
from evalh_pipeline.store.run_dir import RunDirectory

# The stage after which sinks receive the run.
VIEW_STAGE = "summary"


class RunSink(TraceStore[StoreConfigT]):
    """Base of the outputs that receive the run's view: implement :meth:`receive`.

    ``failure_title`` is how ``evalh`` names a journalled failure of this kind of output
    (``"webhook not posted"``); a sink's ``label`` never holds its credential.
    """

    failure_title: ClassVar[str] = "output not updated"

    def receive(self, view: RunView) -> None:
        """Deliver the run's view; raises on failure (the sync journals it)."""
        raise NotImplementedError

    def write_run(self, run_dir: RunDirectory, stage: str) -> None:
        """The store entry point: the view of ``run_dir`` after the summary stage, else nothing."""
        if stage == VIEW_STAGE:
            self.receive(read_view(run_dir))
