"""A third-party evalh plugin as a package author would write it: a system, an evaluator, a store, an enricher.

It imports only evalh_pipeline's public base classes; the test installs it through a
``.dist-info`` with entry points, as ``pip install`` of a wheel would.
"""

from __future__ import annotations

from pathlib import Path

from evalh_pipeline.enrichers.base import EnricherConfig, TraceEnricher
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace, TraceOutput
from evalh_pipeline.outputs.stores.base import StoreConfig, TraceStore
from evalh_pipeline.systems.base import SystemAdapter, SystemConfigModel, SystemResponse, Workspace


class ShoutConfig(SystemConfigModel):
    suffix: str = "!"


class ShoutSystem(SystemAdapter):
    """Answers with the case's ``input.text`` upper-cased, plus ``suffix``."""

    Config = ShoutConfig

    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
        return SystemResponse(output=TraceOutput(final_answer=case.input["text"].upper() + self.config.suffix))


class WordCountConfig(EvaluatorConfigModel):
    min_words: int


class WordCountAtLeast(Evaluator):
    """Passes when the final answer has at least ``min_words`` words."""

    Config = WordCountConfig

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        words = len((trace.output.final_answer or "").split())
        passed = words >= self.config.min_words
        return Verdict(passed, f"{words} words ({'>=' if passed else '<'} {self.config.min_words})",
                       score=float(passed), detail={"words": words})


class CopyStoreConfig(StoreConfig):
    path: str


class TracesCopyStore(TraceStore):
    """A store plugin: keeps a copy of each run's traces.jsonl at `path/<run_id>.jsonl`."""

    Config = CopyStoreConfig

    def write_run(self, run_dir, stage: str) -> None:
        target = Path(self.config.path) / f"{run_dir.run_id}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(run_dir.traces.read_text() if run_dir.traces.exists() else "")


class StampConfig(EnricherConfig):
    label: str = "stamped"


class StampEnricher(TraceEnricher):
    """An enricher plugin: writes its label into extra.stamp."""

    Config = StampConfig

    async def enrich(self, case: EvalCase, trace: Trace) -> None:
        trace.extra["stamp"] = self.config.label
