"""`evalh import openai-evals`: openai/evals' legacy registry (``evals/registry/evals/*.yaml``
with samples under ``evals/registry/data/``) as evalh evals.

registry.py reads a registry file and resolves its evals; graders.py maps each supported
grader class to evaluators whose verdicts are openai/evals' own; importer.py turns the
samples into cases and writes the eval.
"""
