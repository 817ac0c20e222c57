"""The rule of the bundled keyword judge (tests/support/fake_judge_server.py), in one place.

The bundled judge is not a model: it reads no meaning. An assertion holds when every
``"quoted phrase"`` in it occurs (case-insensitively) in the judged text, or, when the
assertion says not/never/no/without, when none does. An assertion with no quoted phrase
gives it nothing to check, so it holds for any answer: the server says so in its reason,
and the eval's load warns about it (evaluators whose judge ``model`` is :data:`MODEL`).
"""

from __future__ import annotations

import re

#: The model name that points an evaluator's judge at the bundled keyword judge.
MODEL = "fake-judge"

QUOTED = re.compile(r'"([^"]+)"')
NEGATED = re.compile(r"\b(not|never|no|without)\b", re.IGNORECASE)

#: The reason the bundled judge gives for an assertion it cannot check.
NOTHING_QUOTED = ('nothing to check: no "quoted phrase" in the assertion, so the keyword judge passes it '
                  'for any answer (it reads no meaning)')

#: The same for a rubric whose criteria quote nothing.
NOTHING_QUOTED_RUBRIC = ('nothing to check: no "quoted phrase" in the criteria, so the keyword judge gives the '
                         'best score (it reads no meaning)')


def quoted_phrases(text: str) -> list[str]:
    """The ``"quoted phrases"`` of an assertion (or rubric criteria): what the keyword judge checks."""
    return QUOTED.findall(text)


def is_keyword_judge(model: str) -> bool:
    """Whether a judge configured with ``model`` is the bundled keyword judge."""
    return model == MODEL


def unchecked_warning(evaluator_kind: str, text: str) -> str:
    """The load warning for an assertion (or criteria) the keyword judge has nothing to check in."""
    return (f"the bundled keyword judge (model {MODEL}) has nothing to check in {evaluator_kind} {text!r}: "
            f'it has no "quoted phrase", so it passes for any answer (quote the words the answer must contain)')
