"""`evalh import`: evals written for other tools, turned into an eval.yaml and its cases.

One package or module per source format (``openai_evals``, ``promptfoo``, ``inspect_log``);
each maps its source to the files of an eval: ``eval.yaml``, its cases and ``import-report.md``.
What they share: the import report (report.py: every construct that does not map, with its file,
line and key, what was done instead and whether that is an error or a note; the one-line
:class:`BadSource`) and the writing of the files (writing.py: all or nothing, through a
temporary folder renamed into place). The eval's name is the config's key (``eval_key``).
"""
