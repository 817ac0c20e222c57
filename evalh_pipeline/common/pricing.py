"""Cost from tokens: a per-model price table, and the rule that turns tokens into dollars.

A system that reports tokens but no cost gets ``metrics.cost_usd`` computed here, before
its trace is written (so evaluators and ``run.cost_limit_usd`` see it). A reported cost
is never overwritten.

Thinking tokens. OpenAI (``completion_tokens``), Anthropic (``output_tokens``) and
DeepSeek count reasoning tokens *inside* the output count; Gemini's
``candidates_token_count`` does not. To never bill a token twice, ``token_thinking`` is
treated as part of ``token_output`` unless either the trace says otherwise
(``metrics.custom["token_output_includes_thinking"] = false``) or the model's price entry
does (``output_includes_thinking: false``). So, per million tokens::

    included:   cost = in * input + (out - thinking) * output + thinking * thinking_rate
    excluded:   cost = in * input + out * output + thinking * thinking_rate

``thinking_per_mtok`` defaults to ``output_per_mtok`` (what providers charge), in which
case the included rule costs exactly ``in * input + out * output``.
``cost_thinking_usd = thinking * thinking_rate`` whenever ``token_thinking`` is set; it is
a part of ``cost_usd``, never added to it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalh_pipeline.errors import UserError
from evalh_pipeline.common.file_kinds import not_a_file_problem, read_regular
from evalh_pipeline.models import RunVariant, TraceMetrics
from evalh_pipeline.common.yaml_files import describe_yaml_error, load_yaml_text

logger = logging.getLogger("evalh_pipeline")

BUILTIN_PRICES = "prices.yaml"
_PER = 1_000_000
# A dated or suffixed name (`gpt-4o-2024-08-06`, `model@001`, `model:free`) matches a
# table entry that is a prefix of it ending at one of these separators.
_PREFIX_SEPARATORS = ("-", "@", ":")


class PriceTableError(UserError, ValueError):
    """A price table file that cannot be read or does not validate."""


class ModelPrice(BaseModel):
    """USD per million tokens for one model."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    thinking_per_mtok: float | None = Field(default=None, ge=0)  # default: the output rate
    output_includes_thinking: bool = True

    @property
    def thinking_rate(self) -> float:
        return self.output_per_mtok if self.thinking_per_mtok is None else self.thinking_per_mtok


class PriceTable(BaseModel):
    """``as_of``, ``currency: USD``, ``models: {name: ModelPrice}``, ``aliases: {alias: name}``."""

    model_config = ConfigDict(extra="forbid")

    as_of: date
    currency: Literal["USD"] = "USD"
    models: dict[str, ModelPrice] = Field(min_length=1)
    aliases: dict[str, str] = Field(default_factory=dict)
    # eval-harness tables price exact model names only (no prefix matching of dated names).
    exact_names: bool = False

    @model_validator(mode="before")
    @classmethod
    def _eval_harness_format(cls, data: Any) -> Any:
        """eval-harness's table (``table_version``, ``freshness_date``, ``*_per_million_tokens``)
        with its meaning: thinking is billed on top of the output at its own rate (default 0),
        and a model is priced only under its exact name."""
        if not isinstance(data, dict) or not ({"table_version", "freshness_date"} & set(data)):
            return data
        if "as_of" in data:
            raise ValueError("give as_of (evalh) or freshness_date/table_version (eval-harness), not both")
        models = data.get("models") or {}
        if not isinstance(models, dict):
            return data  # the field's own error reports it
        converted = {}
        for name, price in models.items():
            if not isinstance(price, dict):
                converted[name] = price
                continue
            unknown = sorted(set(price) - {"input_per_million_tokens", "output_per_million_tokens",
                                           "thinking_per_million_tokens"})
            if unknown:
                raise ValueError(f"models.{name}: unknown key(s) {', '.join(unknown)} (eval-harness's keys: "
                                 "input_per_million_tokens, output_per_million_tokens, thinking_per_million_tokens)")
            converted[name] = {"input_per_mtok": price.get("input_per_million_tokens"),
                               "output_per_mtok": price.get("output_per_million_tokens"),
                               "thinking_per_mtok": price.get("thinking_per_million_tokens", 0.0),
                               "output_includes_thinking": False}
        extra = sorted(set(data) - {"table_version", "freshness_date", "models"})
        if extra:
            raise ValueError(f"unknown key(s) {', '.join(extra)} in an eval-harness price table "
                             "(table_version, freshness_date, models)")
        return {"as_of": data.get("freshness_date"), "models": converted, "exact_names": True}

    @model_validator(mode="after")
    def _aliases_point_at_models(self) -> "PriceTable":
        missing = {a: m for a, m in self.aliases.items() if m not in self.models}
        if missing:
            raise ValueError("aliases name unknown models: "
                             + ", ".join(f"{a} -> {m}" for a, m in sorted(missing.items())))
        return self

    def lookup(self, model: str) -> ModelPrice | None:
        """Exact name or alias, then the longest table name (or alias) that prefixes it.

        A provider prefix (``openai/gpt-4o``) is tried without it when the full name fails.
        """
        for name in (model, model.rsplit("/", 1)[-1]) if "/" in model else (model,):
            found = self._lookup(name)
            if found is not None:
                return found
        return None

    def _lookup(self, model: str) -> ModelPrice | None:
        if model in self.models:
            return self.models[model]
        if self.exact_names:
            return None
        if model in self.aliases:
            return self.models[self.aliases[model]]
        best: str | None = None
        for key in (*self.models, *self.aliases):
            if (len(model) > len(key) and model.startswith(key) and model[len(key)] in _PREFIX_SEPARATORS
                    and (best is None or len(key) > len(best))):
                best = key
        if best is None:
            return None
        return self.models[best] if best in self.models else self.models[self.aliases[best]]


def parse_price_table(data: Any) -> PriceTable:
    try:
        return PriceTable.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: "
                             f"{err['msg'].removeprefix('Value error, ')}" for err in exc.errors())
        raise PriceTableError(f"invalid price table: {problems}") from None


def load_price_table(path: str | Path) -> PriceTable:
    """Read and validate a price table YAML file. Raises :class:`PriceTableError`."""
    path = Path(path)
    problem = not_a_file_problem(path)
    if problem is not None:
        # A FIFO or a device is said as it is and never opened (reading one would block or never end).
        raise PriceTableError(f"price table file not found: {path}" if problem.startswith("file not found")
                              else f"price table {problem}")
    try:
        text = read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PriceTableError(f"cannot read price table {path}: {exc}") from None
    try:
        data = load_yaml_text(text)
    except yaml.YAMLError as exc:
        line, problem = describe_yaml_error(exc, text)
        raise PriceTableError(f"cannot read price table {path}{f':{line}' if line else ''}: invalid YAML: {problem}") from None
    return parse_price_table(data)


@lru_cache(maxsize=1)
def builtin_price_table() -> PriceTable:
    """The table shipped with the package (approximate list prices; see its ``as_of``)."""
    text = resources.files("evalh_pipeline.common").joinpath(BUILTIN_PRICES).read_text(encoding="utf-8")
    return parse_price_table(load_yaml_text(text))


def apply_prices(metrics: TraceMetrics, model: str | None, table: PriceTable) -> TraceMetrics:
    """Fill ``cost_usd`` (and ``cost_thinking_usd``) from tokens; see the module docstring.

    Mutates and returns ``metrics``. Does nothing when the system reported a cost or no
    tokens at all.
    """
    if metrics.cost_usd is not None or (metrics.token_input is None and metrics.token_output is None):
        return metrics
    price = table.lookup(model) if model else None
    if price is None:
        metrics.custom["cost_source"] = f"unknown_model:{model or ''}"
        return metrics
    tokens_in = metrics.token_input or 0
    tokens_out = metrics.token_output or 0
    thinking = metrics.token_thinking or 0
    included = metrics.custom.get("token_output_includes_thinking", price.output_includes_thinking)
    visible_out = max(tokens_out - thinking, 0) if included is not False else tokens_out
    thinking_cost = thinking * price.thinking_rate / _PER
    metrics.cost_usd = tokens_in * price.input_per_mtok / _PER + visible_out * price.output_per_mtok / _PER + thinking_cost
    if metrics.token_thinking is not None and metrics.cost_thinking_usd is None:
        metrics.cost_thinking_usd = thinking_cost
    metrics.custom["cost_source"] = f"price_table:{table.as_of.isoformat()}"
    return metrics


def variant_model(variant: RunVariant) -> str | None:
    """The model a variant calls: ``metadata.model``, else the system's ``model`` key."""
    model = variant.metadata.get("model") or variant.config.get("model")
    return str(model) if model else None


@dataclass
class Pricer:
    """One run's price table, and the once-per-run warning when it is the built-in one."""

    table: PriceTable
    builtin: bool
    _warned: bool = field(default=False, repr=False)

    @classmethod
    def for_path(cls, path: Path | None) -> "Pricer":
        if path is not None:
            return cls(load_price_table(path), builtin=False)
        return cls(builtin_price_table(), builtin=True)

    def price(self, metrics: TraceMetrics, variant: RunVariant) -> TraceMetrics:
        """Compute the cell's cost from its tokens when the system reported none."""
        needs_price = metrics.cost_usd is None and (metrics.token_input is not None or metrics.token_output is not None)
        if not needs_price:
            return metrics  # a reported cost, or no tokens: apply_prices would leave it as it is
        if self.builtin and not self._warned:
            self._warned = True
            logger.warning(
                "costs computed from tokens with the built-in price table (as of %s); "
                "prices change: set metrics.price_table_path in eval.yaml for accurate costs",
                self.table.as_of.isoformat(),
            )
        return apply_prices(metrics, variant_model(variant), self.table)
