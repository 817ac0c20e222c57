"""LLM judges: asking a chat backend for a verdict, the verdict cache, prompt building.

Engine code: no Dagster here. Evaluators (``llm_judge``, ``thinking_does_not_leak``) use
:class:`evalh_pipeline.judges.judge.Judge`; the chat backends it calls live in
:mod:`evalh_pipeline.llm` and are pluggable through
:data:`evalh_pipeline.llm.registry.JUDGE_BACKENDS`.
"""
