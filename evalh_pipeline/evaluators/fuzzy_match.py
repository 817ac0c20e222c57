"""``fuzzy_match``: openai/evals' FuzzyMatch grader, verdict for verdict.

openai/evals (commit 4bfc1f58) evals/elsuite/basic/fuzzy_match.py:38-44 passes a sample
when ``utils.fuzzy_match(sampled, answer)`` holds for any correct answer, and
evals/elsuite/utils.py:36-53 defines it: both texts normalized (lower-cased, ASCII
punctuation removed, the words a/an/the replaced by a space, whitespace collapsed); two
empty texts match, one empty text matches nothing, otherwise either contains the other.
"""

from __future__ import annotations

from typing import Any

import re
import string

from pydantic import Field, field_validator

from evalh_pipeline.common.fields import FieldPath, as_text, check_field_path
from evalh_pipeline.evaluators.base import EvaluatorConfigModel, EvaluatorContext, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize(text: str) -> str:
    """openai/evals' ``utils.normalize`` (evals/elsuite/utils.py:36-43)."""
    text = text.lower()
    text = "".join(char for char in text if char not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def fuzzy_match(first: str, second: str) -> bool:
    """openai/evals' ``utils.fuzzy_match`` (evals/elsuite/utils.py:46-53)."""
    first, second = normalize(first), normalize(second)
    if first == "" or second == "":
        return first == second
    return first in second or second in first


class FuzzyMatchConfig(EvaluatorConfigModel):
    # The correct answers (openai/evals' ``ideal``): one fuzzy match among them passes.
    any_of: list[str] = Field(min_length=1)
    field: str = "output.final_answer"

    @field_validator("field")
    @classmethod
    def _parsable(cls, value: str) -> str:
        return check_field_path(value)


class FuzzyMatch(SyncEvaluator[FuzzyMatchConfig]):
    """Passes when the field's text and one of ``any_of`` contain each other once normalized
    (see the module docstring); a missing field is empty text."""

    reads_case = False

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        self._path = FieldPath(self.config.field)
        self.trace_fields = self._path.model_fields_read(Trace)  # per instance: the field it reads

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        text = as_text(self._path.get(trace))
        matched = [answer for answer in self.config.any_of if fuzzy_match(text, answer)]
        detail = {"field": self.config.field, "normalized": normalize(text), "matched": matched}
        if matched:
            return Verdict(True, f"{self.config.field} fuzzily matches {matched[0]!r}", score=1.0, detail=detail)
        return Verdict(False, f"{self.config.field} fuzzily matches none of {self.config.any_of!r}", score=0.0,
                       detail=detail)
