"""Inspect AI's built-in string scorers as evalh evaluators, for a fresh run of an imported log.

The verdicts are Inspect's (inspect_ai ``src/inspect_ai/scorer/``): a sample is correct when
its completion matches any of its targets.

- ``match(location="end", *, ignore_case=True, numeric=False)`` (``_match.py``, with
  ``match_str`` in ``_common.py``): both texts stripped of whitespace, case-folded when
  ``ignore_case``, then stripped of leading and trailing whitespace and ASCII punctuation;
  ``begin``: the answer starts with the target, ``end``: ends with it, ``exact``: equals it,
  ``any``: contains it.
- ``includes(ignore_case=True)`` (``_match.py``): the target occurs in the answer
  (``lower()`` on both when ``ignore_case``).

Each becomes a ``regex_match`` on the answer: the targets, escaped and stripped as Inspect
strips them, anchored as ``location`` says with whitespace and punctuation allowed at the
anchored ends. ``numeric`` matching and other scorers are not mapped (the caller reports them).
"""

from __future__ import annotations

import re
import string
from typing import Any

# string.whitespace and string.punctuation (ASCII), what Inspect's strip_punctuation strips.
_EDGE = r"[ \t\n\r\x0b\x0c!-/:-@\[-`{-~]*"
LOCATIONS = ("begin", "end", "exact", "any")


def scorer_evaluator(name: str, options: dict[str, Any], targets: list[str]) -> dict[str, Any] | str:
    """The evaluator (``type`` and ``config``) judging a fresh answer as Inspect scorer ``name``
    with ``options`` would against ``targets``, or why it does not map (a sentence)."""
    if name == "match":
        location = options.get("location", "end")
        ignore_case = options.get("ignore_case", True)
        if options.get("numeric"):
            return "numeric matching (numbers normalized before comparing) is not mapped"
        if location not in LOCATIONS or not isinstance(ignore_case, bool):
            return f"options {options!r} are not match()'s (location one of {', '.join(LOCATIONS)})"
        stripped = [t.strip().strip(string.whitespace + string.punctuation) for t in targets]
        either = "|".join(re.escape(t) for t in stripped) if stripped else "(?!)"
        pattern = {"begin": rf"\A{_EDGE}(?:{either})", "end": rf"(?:{either}){_EDGE}\Z",
                   "exact": rf"\A{_EDGE}(?:{either}){_EDGE}\Z", "any": f"(?:{either})"}[location]
        return _regex(pattern, ignore_case)
    if name == "includes":
        ignore_case = options.get("ignore_case", True)
        if not isinstance(ignore_case, bool):
            return f"options {options!r} are not includes()'s (ignore_case: a boolean)"
        either = "|".join(re.escape(t) for t in targets) if targets else "(?!)"
        return _regex(f"(?:{either})", ignore_case)
    return f"scorer {name!r} is not one evalh maps for a fresh run (match, includes)"


def _regex(pattern: str, ignore_case: bool) -> dict[str, Any]:
    config: dict[str, Any] = {"pattern": pattern}
    if ignore_case:
        config["flags"] = ["ignorecase"]
    return {"type": "regex_match", "config": config}
