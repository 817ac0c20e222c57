"""Statistics for judging runs: paired tests and intervals on verdicts (paired.py), intervals on
proportions and power (proportions.py), clustered cases (clustering.py), multiplicity
adjustments (multiplicity.py), the signed-rank test on scores (signed_rank.py) and repeat
estimators (repeats.py). Pure Python: ``evalh compare`` and ``evalh drift`` import them at
start-up, and each is tested against scipy or statsmodels (tests/stats)."""
