"""Importers: other tools' eval files turned into an evalh eval (``evalh import <tool>``).

One package per source tool; each writes ``eval.yaml``, its cases and ``import-report.md``.
"""
