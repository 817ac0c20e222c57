"""`evalh import openai-evals`: openai/evals' legacy registry (``evals/registry/evals/*.yaml``
with samples under ``evals/registry/data/``) as evalh evals.

registry.py reads a registry file and resolves its evals; graders.py maps each supported
grader class to evaluators whose verdicts are openai/evals' own; importer.py turns the
samples into cases and writes the eval. hosted.py reads an export of OpenAI's hosted Evals
product (an eval object with its runs and output items) instead.
"""
