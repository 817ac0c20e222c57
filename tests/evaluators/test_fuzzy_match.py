"""fuzzy_match: openai/evals' FuzzyMatch verdicts (evals/elsuite/utils.py:36-53 at commit
4bfc1f58: normalize, then containment either way; two empty texts match)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.fuzzy_match import FuzzyMatch, normalize
from evalh_pipeline.models import EvalCase, Trace, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def judge(answer: str | None, any_of: list[str]) -> bool:
    trace = Trace(run_id="r", case_id="c", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                  output=TraceOutput(final_answer=answer))
    return FuzzyMatch("fuzzy", "fuzzy_match", {"any_of": any_of}).evaluate_sync(EvalCase(id="c"), trace, None).passed


@pytest.mark.parametrize(("text", "normalized"), [
    # utils.py:38: lower(); :39-40: string.punctuation removed; :41: \b(a|an|the)\b -> " "; :42: split/join.
    ("The  Quick, brown FOX!", "quick brown fox"),
    ("An apple a day", "apple day"),
    ("theater", "theater"),            # "the" only as a word
    ("Paris\u2014France", "paris\u2014france"),  # not ASCII punctuation: kept
    ("(a.b)", "ab"),                   # punctuation goes before articles are looked for
])
def test_normalize_is_openai_evals_normalize(text, normalized):
    assert normalize(text) == normalized


@pytest.mark.parametrize(("answer", "any_of", "passed"), [
    ("The answer is Paris.", ["paris"], True),        # the answer contains the ideal
    ("Paris", ["The city of Paris"], True),           # the ideal contains the answer
    ("Lyon", ["Paris", "lyon"], True),                # any ideal
    ("Lyon", ["Paris"], False),
    ("the", ["a"], True),                             # both normalize to "": utils.py:50-51
    ("", ["Paris"], False),                           # one empty: no match
    (None, ["Paris"], False),                         # no answer is empty text
    ("Paris\u2014France", ["Paris France"], False),
])
def test_the_verdict_is_openai_evals_fuzzy_match(answer, any_of, passed):
    assert judge(answer, any_of) is passed


def test_it_needs_at_least_one_answer():
    with pytest.raises(ValidationError):
        FuzzyMatch("fuzzy", "fuzzy_match", {"any_of": []})
