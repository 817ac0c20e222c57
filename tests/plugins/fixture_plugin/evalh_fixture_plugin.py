"""A third-party evalh plugin as a package author would write it: one system, one evaluator.

It imports only evalh_pipeline's public base classes; the test installs it through a
``.dist-info`` with entry points, as ``pip install`` of a wheel would.
"""

from __future__ import annotations

from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace, TraceOutput
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
