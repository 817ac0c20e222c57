"""Evaluator registry: ``evaluators[].type`` names -> classes."""

from __future__ import annotations

from evalh_pipeline.evaluators.base import Evaluator
from evalh_pipeline.registry import Registry

EVALUATORS: Registry[Evaluator] = Registry(
    "evaluator type",
    "evalh_pipeline.evaluators",
    {
        "contains_text": "evalh_pipeline.evaluators.contains_text:ContainsText",
        "exact_match": "evalh_pipeline.evaluators.exact_match:ExactMatch",
        "tool_called": "evalh_pipeline.evaluators.tool_called:ToolCalled",
    },
)
