"""evalh_pipeline: an evaluation harness for AI systems, built as a Dagster project.

The engine (models, config, systems, evaluators, runner, store, queries) is plain
Python; only ``evalh_pipeline.defs`` imports Dagster.
"""

__version__ = "0.1.0"
