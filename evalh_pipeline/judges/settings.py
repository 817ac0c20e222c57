"""The judge part of an evaluator's config (model, backend, limits), validated at load."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from evalh_pipeline.evaluators import eval_harness_keys
from evalh_pipeline.evaluators.base import EvaluatorConfigModel
from evalh_pipeline.judges.registry import resolve_backend
from evalh_pipeline.common.pricing import ModelPrice, builtin_price_table


class JudgeSettings(EvaluatorConfigModel):
    """Which judge to call and how. The API key is named (``api_key_env``), never written here."""

    backend: str | None = None  # wins over the backend guessed from the model name
    model: str = Field(min_length=1)
    base_url: str | None = None  # default: the backend's environment variable, then its public URL
    api_key_env: str | None = None  # default: the backend's (OPENAI_API_KEY, ANTHROPIC_API_KEY)
    timeout_seconds: float = Field(default=60.0, gt=0)
    max_tokens: int = Field(default=1024, gt=0)
    temperature: float = Field(default=0.0, ge=0)
    price: ModelPrice | None = None  # USD per million tokens; default: the built-in price table
    cost_limit_usd: float | None = Field(default=None, ge=0)
    cache: bool = False

    @model_validator(mode="before")
    @classmethod
    def _eval_harness_price(cls, data: Any) -> Any:
        return eval_harness_keys.judge_price(data)

    @field_validator("model")
    @classmethod
    def _has_backend(cls, model: str, info: ValidationInfo) -> str:
        resolve_backend(model, info.data.get("backend"))
        return model

    @field_validator("cost_limit_usd")
    @classmethod
    def _priced(cls, limit: float | None, info: ValidationInfo) -> float | None:
        model = info.data.get("model")
        if limit is not None and model and info.data.get("price") is None and builtin_price_table().lookup(model) is None:
            raise ValueError(f"cost_limit_usd needs a price for judge model {model!r}, which the built-in price "
                             f"table does not list: add price: {{input_per_mtok: ..., output_per_mtok: ...}}")
        return limit
