"""A third-party evalh plugin as a package author would write it: a system, an evaluator, a store, an enricher.

It imports only what ``evalh_pipeline.__all__`` names; the test installs it through a
``.dist-info`` with entry points, as ``pip install`` of a wheel would. Each plugin names its
config model as its base's parameter, so ``self.config`` is typed: ``./dev lint`` runs mypy
strict over this file (pyproject.toml [tool.mypy] files).
"""

from __future__ import annotations

from pathlib import Path

from evalh_pipeline import (
    EnricherConfig,
    EvalCase,
    Evaluator,
    EvaluatorConfigModel,
    FilesystemArtifact,
    RunDirectory,
    StoreConfig,
    SystemAdapter,
    SystemConfigModel,
    SystemResponse,
    Trace,
    TraceEnricher,
    TraceOutput,
    TraceStore,
    Verdict,
    Workspace,
)


class ShoutConfig(SystemConfigModel):
    suffix: str = "!"


class ShoutSystem(SystemAdapter[ShoutConfig]):
    """Answers with the case's ``input.text`` upper-cased, plus ``suffix``."""

    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
        return SystemResponse(output=TraceOutput(final_answer=case.input["text"].upper() + self.config.suffix))


class WordCountConfig(EvaluatorConfigModel):
    min_words: int


class WordCountAtLeast(Evaluator[WordCountConfig]):
    """Passes when the final answer has at least ``min_words`` words."""

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        words = len((trace.output.final_answer or "").split())
        passed = words >= self.config.min_words
        return Verdict(passed, f"{words} words ({'>=' if passed else '<'} {self.config.min_words})",
                       score=float(passed), detail={"words": words})


class CopyStoreConfig(StoreConfig):
    path: str


class TracesCopyStore(TraceStore[CopyStoreConfig]):
    """A store plugin: keeps a copy of each run's traces.jsonl at `path/<run_id>.jsonl`."""

    def write_run(self, run_dir: RunDirectory, stage: str) -> None:
        target = Path(self.config.path) / f"{run_dir.run_id}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(run_dir.traces.read_text() if run_dir.traces.exists() else "")


class StampConfig(EnricherConfig):
    label: str = "stamped"


class StampEnricher(TraceEnricher[StampConfig]):
    """An enricher plugin: writes its label into extra.stamp."""

    async def enrich(self, case: EvalCase, trace: Trace) -> None:
        trace.extra["stamp"] = self.config.label
