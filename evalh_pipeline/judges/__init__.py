"""LLM judges: backends that answer a prompt with JSON, the verdict cache, prompt building.

Engine code: no Dagster here. Evaluators (``llm_judge``, ``thinking_does_not_leak``) use
:class:`evalh_pipeline.judges.judge.Judge`; backends are pluggable through
:data:`evalh_pipeline.judges.registry.JUDGE_BACKENDS`.
"""
