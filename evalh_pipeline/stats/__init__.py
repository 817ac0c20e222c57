"""Statistics for comparing runs: paired tests on verdicts (paired.py) and repeat estimators
(repeats.py). Pure Python: ``evalh compare`` and ``evalh drift`` import them at start-up."""
