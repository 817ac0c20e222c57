"""The parity registry and the scripted answers the openai/evals tests share (the verdicts'
sources: tests/importers/openai_evals/test_verdict_parity.py's docstring)."""

from __future__ import annotations

from pathlib import Path

REGISTRY = Path(__file__).parent / "registry"  # evals/parity.yaml, data/parity/: written here

# prompt (the last message) -> the model's answer, and the verdicts of
# (Match, Includes, Includes ignore_case, FuzzyMatch) for the sample's ideal (data/parity/samples.jsonl).
SCRIPT = [
    ("q1", "Paris is the capital.", (True, True, True, True)),             # ideal "Paris"
    ("q2", "The capital is Paris", (False, True, True, True)),             # not at the start
    ("q3", "paris", (False, False, True, True)),                           # case differs
    ("q4", "Paris, France", (True, True, True, True)),                     # ideals ["Lyon", "Paris"]: the second
    ("q5", "An answer: the Eiffel Tower!", (False, False, True, True)),   # "eiffel tower": normalized, contained
    ("q6", " Paris", (False, True, True, True)),                           # a leading space: startswith fails
    ("q7", "the", (False, False, False, True)),                            # ideal "a": both normalize to ""
    ("q8", "Rome", (False, False, False, False)),
    ("q9", "Paris", (False, False, False, True)),                          # the ideal contains the answer
    ("q10", "Paris\u2014France", (False, False, False, False)),            # an em dash is not ASCII punctuation
    ("q11", "\u00dcn\u00efcode ANSWER", (False, False, True, True)),       # "ünïcode answer": str.lower() folds it
    ("q12", "(a.b)", (False, False, False, True)),                         # ideal "ab": punctuation removed
    ("q13 asked as a text prompt", "Paris", (True, True, True, True)),   # input is a string
    ("q14", "Paris", (False, False, False, None)),                         # ideal []: nothing to match
]
