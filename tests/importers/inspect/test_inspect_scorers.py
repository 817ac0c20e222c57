"""Inspect's ``match`` and ``includes`` scorers, mapped to ``regex_match`` evaluators, give
Inspect's verdict on each answer.

The expected verdicts follow inspect_ai 0.3.285's source: ``match_str``
(src/inspect_ai/scorer/_common.py: both texts ``strip()``-ed, ``casefold()``-ed when
``ignore_case``, then ``strip_punctuation`` = ``s.strip(string.whitespace +
string.punctuation)`` from src/inspect_ai/_util/text.py; ``begin``: ``startswith``, ``end``:
``endswith``, ``exact``: ``==``, ``any``: ``in``), ``str_match_scorer`` (correct when any
target matches) and ``includes`` (src/inspect_ai/scorer/_match.py: ``target in value``,
both case-folded when ``ignore_case``).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest

from evalh_pipeline.evaluators.regex_match import RegexMatch
from evalh_pipeline.importers.inspect_scorers import scorer_evaluator
from evalh_pipeline.models import EvalCase, Trace, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)

# (scorer, options, targets, answer, Inspect's verdict)
CASES = [
    ("match", {}, ["Paris"], "It is Paris.", True),              # end, punctuation stripped
    ("match", {}, ["Paris"], "paris", True),                     # case folded
    ("match", {}, ["Paris"], "Paris is it", False),
    ("match", {}, ["Paris"], "  Paris!?  \n", True),
    ("match", {}, ["4"], "24", True),                            # not numeric: "24".endswith("4")
    ("match", {}, ["Lima", "Lima, Peru"], "Lima, Peru", True),   # the second target
    ("match", {}, ["(a.b)"], "x a.b", True),                     # the target's edge punctuation stripped too
    ("match", {}, ["..."], "anything", True),                    # a target of punctuation only: ""
    ("match", {"ignore_case": False}, ["Paris"], "paris", False),
    ("match", {"location": "begin"}, ["Paris"], "...Paris is it", True),
    ("match", {"location": "begin"}, ["Paris"], "It is Paris", False),
    ("match", {"location": "exact"}, ["Paris"], " PARIS. ", True),
    ("match", {"location": "exact"}, ["Paris"], "Paris, France", False),
    ("match", {"location": "any"}, ["Paris"], "in Paris, France", True),
    ("match", {"location": "any"}, ["a-b"], "xa-by", True),
    ("includes", {}, ["Paris"], "in PARIS today", True),
    ("includes", {}, ["Paris."], "Paris", False),                # no stripping in includes
    ("includes", {"ignore_case": False}, ["Paris"], "in PARIS today", False),
    ("includes", {"ignore_case": False}, ["Paris"], "in Paris today", True),
    ("includes", {}, ["x", "y"], "a y b", True),
    ("includes", {}, ["a+b"], "1 A+B 2", True),                  # regex characters escaped
]


@pytest.mark.parametrize(("scorer", "options", "targets", "answer", "inspects"), CASES)
def test_a_mapped_scorer_gives_inspects_verdict(scorer, options, targets, answer, inspects):
    found = scorer_evaluator(scorer, options, targets)
    assert not isinstance(found, str)
    assert found["type"] == "regex_match"
    trace = Trace(run_id="r", case_id="c", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                  output=TraceOutput(final_answer=answer))
    verdict = asyncio.run(RegexMatch(scorer, "regex_match", found["config"]).evaluate(EvalCase(id="c"), trace, None))
    assert verdict.passed is inspects


@pytest.mark.parametrize(("scorer", "options", "why"), [
    ("match", {"numeric": True}, "numeric matching"),
    ("match", {"location": "middle"}, "location one of begin, end, exact, any"),
    ("model_graded_qa", {}, "not one evalh maps"),
    ("includes", {"ignore_case": "yes"}, "ignore_case: a boolean"),
])
def test_what_does_not_map_says_why(scorer, options, why):
    found = scorer_evaluator(scorer, options, ["x"])
    assert isinstance(found, str) and why in found
