"""``openai_python_grader``: a hosted OpenAI Evals ``python`` grader, run as OpenAI runs it.

The graders guide (https://platform.openai.com/docs/guides/graders, "Python graders"): the
grader's ``source`` defines ``grade(sample, item) -> float``; ``sample`` holds the model's
answer as ``output_text`` (and ``output_json`` when that text is JSON), ``item`` the
datasource item; the result passes when the score is at least ``pass_threshold``. The code
is the eval author's, run in a child Python process (this interpreter, with its packages,
where OpenAI runs a sandbox image) with the evaluator's timeout.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from pydantic import Field

from evalh_pipeline.common.fields import as_text
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, Verdict
from evalh_pipeline.evaluators.promptfoo_script import RESULT_MARK, run_child
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

# Runs in the child: reads {source, sample, item} on stdin, prints grade()'s result after a marker.
_RUNNER = r"""
import json, sys, types
job = json.load(sys.stdin)
module = types.ModuleType("grader")
module.__file__ = "grader.py"
exec(compile(job["source"], "grader.py", "exec"), module.__dict__)
sys.stdout.write(MARK + json.dumps(module.grade(job["sample"], job["item"])))
""".replace("MARK", repr(RESULT_MARK))


class OpenAIPythonGraderConfig(EvaluatorConfigModel):
    """The grader's ``source``, the case's datasource ``item`` and ``pass_threshold``."""

    TRACE_FIELDS = ("output.final_answer",)

    source: str = Field(min_length=1)
    item: dict[str, Any] = Field(default_factory=dict)
    pass_threshold: float
    timeout_seconds: float = Field(default=60.0, gt=0)


class OpenAIPythonGrader(Evaluator[OpenAIPythonGraderConfig]):
    """Calls the grader's ``grade(sample, item)`` on the answer (see the module doc)."""

    reads_case = False

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        answer = as_text(trace.output.final_answer)
        sample: dict[str, Any] = {"output_text": answer}
        try:
            sample["output_json"] = json.loads(answer)
        except ValueError:
            pass
        job = {"source": cfg.source, "sample": sample, "item": cfg.item}
        ok, value = await run_child([sys.executable, "-c", _RUNNER], json.dumps(job), cfg.timeout_seconds)
        if not ok:
            return Verdict(False, f"python grader failed: {value}", score=0.0, detail={"error": value})
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return Verdict(False, f"python grader returned {json.dumps(value)[:80]}, not a number", score=0.0)
        passed = value >= cfg.pass_threshold
        return Verdict(passed, f"score {value:g} {'>=' if passed else '<'} pass_threshold {cfg.pass_threshold:g}",
                       score=float(value), detail={"score": value})
