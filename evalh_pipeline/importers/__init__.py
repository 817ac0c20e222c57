"""`evalh import`: evals written for other tools, turned into an eval.yaml and its cases.

One package per source format (``openai_evals``, ``promptfoo``); each writes ``eval.yaml``,
its cases and ``import-report.md``. What they share: the import report (report.py: every
construct that does not map, with its file and line) and the writing of the result
(writing.py: all or nothing, through a temporary folder renamed into place).
"""
