"""The judge part of an evaluator's config (model, backend, limits), validated at load."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from evalh_pipeline.llm.registry import resolve_backend
from evalh_pipeline.common.pricing import ModelPrice, builtin_price_table


class JudgeSettings(BaseModel):
    """Which judge to call and how. The API key is named (``api_key_env``), never written here."""

    model_config = ConfigDict(extra="forbid")  # unknown keys are errors, caught when the eval loads

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
    # A named limit (run.executor.pools) this judge's calls share with other judges and systems.
    pool: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _eval_harness_price(cls, data: Any) -> Any:
        return _harness_judge_price(data)

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


# eval-harness 2.0.2 prices a judge call for cost_limit_usd from this coarse table, and any
# other model at its default rate. Its only judge backend serves claude-* models.
_HARNESS_JUDGE_RATES = {
    "claude-4-7": (3.0, 15.0),
    "claude-haiku-4-5-20251001": (0.25, 1.25),
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-opus-4-7": (15.0, 75.0),
}
_HARNESS_DEFAULT_RATE = (3.0, 15.0)


def _harness_judge_price(data: Any) -> Any:
    """A ``claude-*`` judge with ``cost_limit_usd`` but no price we know gets eval-harness's
    rate (instead of our load error asking for ``price:``), so its configs load unchanged."""
    if not isinstance(data, dict) or data.get("cost_limit_usd") is None or "price" in data:
        return data
    model = data.get("model")
    if not isinstance(model, str) or not fnmatchcase(model, "claude-*") or builtin_price_table().lookup(model):
        return data
    rate_in, rate_out = _HARNESS_JUDGE_RATES.get(model, _HARNESS_DEFAULT_RATE)
    return {**data, "price": {"input_per_mtok": rate_in, "output_per_mtok": rate_out}}
