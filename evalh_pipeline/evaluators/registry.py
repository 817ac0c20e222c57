"""Evaluator registry: ``evaluators[].type`` names -> classes."""

from __future__ import annotations

from evalh_pipeline.evaluators.base import Evaluator
from evalh_pipeline.registry import Registry

EVALUATORS: Registry[Evaluator] = Registry(
    "evaluator type",
    "evalh_pipeline.evaluators",
    {
        "command": "evalh_pipeline.evaluators.command:Command",
        "contains_text": "evalh_pipeline.evaluators.contains_text:ContainsText",
        "cost_under": "evalh_pipeline.evaluators.cost_under:CostUnder",
        "evaluator_set": "evalh_pipeline.evaluators.evaluator_set:EvaluatorSet",
        "exact_match": "evalh_pipeline.evaluators.exact_match:ExactMatch",
        "fuzzy_match": "evalh_pipeline.evaluators.fuzzy_match:FuzzyMatch",
        "git_diff": "evalh_pipeline.evaluators.git_diff:GitDiff",
        "latency_first_token_under": "evalh_pipeline.evaluators.latency_first_token_under:LatencyFirstTokenUnder",
        "latency_under": "evalh_pipeline.evaluators.latency_under:LatencyUnder",
        "llm_judge": "evalh_pipeline.evaluators.llm_judge:LlmJudge",
        "openai_model_graded": "evalh_pipeline.evaluators.openai_model_graded:OpenAIModelGraded",
        "openai_python_grader": "evalh_pipeline.evaluators.openai_python_grader:OpenAIPythonGrader",
        "openai_score_model": "evalh_pipeline.evaluators.openai_score_model:OpenAIScoreModel",
        "promptfoo_assert": "evalh_pipeline.evaluators.promptfoo_assert:PromptfooAssert",
        "promptfoo_graded": "evalh_pipeline.evaluators.promptfoo_graded:PromptfooGraded",
        "promptfoo_script": "evalh_pipeline.evaluators.promptfoo_script:PromptfooScript",
        "regex_match": "evalh_pipeline.evaluators.regex_match:RegexMatch",
        "schema_match": "evalh_pipeline.evaluators.schema_match:SchemaMatch",
        "semantic_similarity": "evalh_pipeline.evaluators.semantic_similarity:SemanticSimilarity",
        "stream_completed": "evalh_pipeline.evaluators.stream_completed:StreamCompleted",
        "thinking_does_not_leak": "evalh_pipeline.evaluators.thinking_does_not_leak:ThinkingDoesNotLeak",
        "thinking_present": "evalh_pipeline.evaluators.thinking_present:ThinkingPresent",
        "thinking_tokens_under": "evalh_pipeline.evaluators.thinking_tokens_under:ThinkingTokensUnder",
        "tokens_per_second_above": "evalh_pipeline.evaluators.tokens_per_second_above:TokensPerSecondAbove",
        "tool_called": "evalh_pipeline.evaluators.tool_called:ToolCalled",
    },
)
