"""Authored files: eval.yaml and datasets, env expansion, validation with line numbers.

To load an eval with every plugin entry checked, use ``evalh_pipeline.runner.loading.load_eval``
(config imports no plugin family: the registries are handed to :func:`read_eval` from above).
"""

from evalh_pipeline.config.errors import ConfigError, ConfigIssue
from evalh_pipeline.config.loader import PluginRegistries, read_eval
from evalh_pipeline.config.spec import EvalSpec

__all__ = ["ConfigError", "ConfigIssue", "EvalSpec", "PluginRegistries", "read_eval"]
