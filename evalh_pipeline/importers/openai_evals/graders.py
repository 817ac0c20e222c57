"""openai/evals' grader classes, each mapped to evaluators with its verdicts and to the
request fields it sends the model.

Verdicts follow openai/evals' code at commit 4bfc1f58 (cited per grader); the tests check
them on the same answers (tests/importers/openai_evals/).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The answer of a sample without any ideal: openai/evals records no match for it.
_NEVER = {"type": "regex_match", "config": {"pattern": "(?!)"}}


def match_evaluator(ideal: list[str]) -> dict[str, Any]:
    """openai/evals' ``record_and_check_match`` on ``ideal`` as an evaluator (type and config)."""
    return _match(ideal, {})


def _match(ideal: list[str], args: dict[str, Any]) -> dict[str, Any]:
    # evals/api.py:79-92 (record_and_check_match): the first option the sampled text
    # ``startswith`` is picked; a match when one is. ``\A`` + an escaped literal is startswith.
    if not ideal:
        return _NEVER
    return {"type": "regex_match",
            "config": {"pattern": r"\A(?:" + "|".join(re.escape(option) for option in ideal) + ")"}}


def _includes(ideal: list[str], args: dict[str, Any]) -> dict[str, Any]:
    # evals/elsuite/basic/includes.py:34-46 and utils.py:17-25 (get_answer): a match when
    # ``text.rfind(ref) != -1`` (``ref in text``) for any ideal; with ``ignore_case`` both
    # sides are ``.lower()``ed first, as contains_text folds them.
    if not ideal:
        return _NEVER  # any([]) is False
    return {"type": "contains_text",
            "config": {"any_of": ideal, "all_of": [], "none_of": [], "case_sensitive": not args.get("ignore_case")}}


def _fuzzy(ideal: list[str], args: dict[str, Any]) -> dict[str, Any]:
    # evals/elsuite/basic/fuzzy_match.py:38-44 with utils.py:36-53: the fuzzy_match evaluator
    # (a sample without an ideal never gets here: Grader.empty_ideal).
    return {"type": "fuzzy_match", "config": {"any_of": ideal}}


@dataclass(frozen=True)
class Grader:
    """How one grader class maps: the case evaluator of a sample, the request fields sent."""

    evaluator_name: str
    evaluator: Callable[[list[str], dict[str, Any]], dict[str, Any]]
    request: Callable[[dict[str, Any]], dict[str, Any]]
    args: frozenset[str]  # the args it reads (others are reported)
    metrics: tuple[str, ...]  # what its run() reports besides accuracy
    # Why a sample with no ideal at all cannot be imported (None: it is, as a failing case).
    empty_ideal: str | None = None


GRADERS: dict[str, Grader] = {
    # match.py:50-53: temperature 0; max_tokens is accepted but never sent (match.py:16,24).
    "evals.elsuite.basic.match:Match": Grader(
        "match", _match, lambda args: {"temperature": 0.0},
        frozenset({"samples_jsonl", "max_tokens", "num_few_shot", "few_shot_jsonl"}), ("boostrap_std",)),
    # includes.py:31-33: the prompt only, the API's defaults otherwise.
    "evals.elsuite.basic.includes:Includes": Grader(
        "includes", _includes, lambda args: {}, frozenset({"samples_jsonl", "ignore_case"}), ("boostrap_std",)),
    # fuzzy_match.py:32-36: temperature 0, max_tokens (default 100).
    "evals.elsuite.basic.fuzzy_match:FuzzyMatch": Grader(
        "fuzzy_match", _fuzzy, lambda args: {"temperature": 0.0, "max_tokens": args.get("max_tokens", 100)},
        frozenset({"samples_jsonl", "max_tokens"}), ("f1_score",),
        empty_ideal="openai/evals raises on it (utils.py:88, max() of no F1 score), which stops its whole run"),
}
