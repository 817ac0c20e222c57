"""Authored files: eval.yaml and datasets, env expansion, validation with line numbers."""

from evalh_pipeline.config.errors import ConfigError, ConfigIssue
from evalh_pipeline.config.loader import load_eval
from evalh_pipeline.config.spec import EvalSpec

__all__ = ["ConfigError", "ConfigIssue", "EvalSpec", "load_eval"]
