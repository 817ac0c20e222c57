"""Embedder registry: ``semantic_similarity`` ``embedder:`` names -> classes.

An embedder is named in YAML either alone (``embedder: hashing``) or with its options
(``embedder: {name: openai_compatible, model: text-embedding-3-small}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from evalh_pipeline.common.ratelimits import RateLimits
from evalh_pipeline.errors import UserError
from evalh_pipeline.embedders.base import Embedder
from evalh_pipeline.registry import Registry, UnknownTypeError

EMBEDDERS: Registry[Embedder] = Registry(
    "embedder",
    "evalh_pipeline.embedders",
    {
        "hashing": "evalh_pipeline.embedders.hashing:HashingEmbedder",
        "openai_compatible": "evalh_pipeline.embedders.openai_compatible:OpenAICompatibleEmbedder",
        "sentence_transformers": "evalh_pipeline.embedders.sentence_transformers:SentenceTransformersEmbedder",
        "wordllama": "evalh_pipeline.embedders.wordllama:WordLlamaEmbedder",
    },
)


class EmbedderUnavailable(UserError, ValueError):
    """A known embedder whose package (an optional extra) or model is missing here.

    ``semantic_similarity`` does not fail to load for it: the loader warns with this message
    and every result of the evaluator is an error saying the same (eval-harness's behaviour).
    """

# eval-harness 2.0.2's embedder names (``embedder_name:``): what we have under another name,
# and what we do not have at all (loading says so instead of "unknown embedder").
EVAL_HARNESS_ALIASES: dict[str, dict[str, Any]] = {
    "openai-text-embedding-3-small": {"name": "openai_compatible", "model": "text-embedding-3-small"},
}
_SENTENCE_TRANSFORMERS_PREFIX = "sentence-transformers/"


def check_embedder_spec(spec: str | Mapping[str, Any]) -> dict[str, Any]:
    """Normalize an ``embedder:`` value to ``{name, **options}``; ValueError says what is wrong.

    Run when the eval loads, so an unknown name, a bad option or a missing optional
    extra is a config error rather than a failure in the middle of a run.
    """
    spec = {"name": spec} if isinstance(spec, str) else dict(spec)
    name = spec.pop("name", None)
    if isinstance(name, str) and name.startswith(_SENTENCE_TRANSFORMERS_PREFIX):
        # eval-harness names a sentence-transformers model by its Hugging Face id.
        spec = {"model": name, **spec}
        name = "sentence_transformers"
    if name in EVAL_HARNESS_ALIASES:
        spec = {**EVAL_HARNESS_ALIASES[name], **spec}
        name = spec.pop("name")
    if not isinstance(name, str) or not name:
        raise ValueError("embedder needs a name (e.g. `embedder: hashing` or `embedder: {name: hashing, dim: 512}`)")
    try:
        cls = EMBEDDERS.get(name)
    except UnknownTypeError as exc:
        raise ValueError(str(exc)) from None
    reason = cls.unavailable_reason()
    if reason:
        raise EmbedderUnavailable(f"embedder {name!r} is not available: {reason}")
    try:
        cls.Config.model_validate(spec)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {_message(e, cls)}" for e in exc.errors())
        raise ValueError(f"embedder {name!r}: {problems}") from None
    return {"name": name, **spec}


def build_embedder(spec: str | Mapping[str, Any], env: Mapping[str, str] | None = None,
                   rate_limits: RateLimits | None = None) -> Embedder:
    """The embedder an ``embedder:`` value names, configured with its options; ``rate_limits``:
    the run's (an embedder that calls a server shares them with its systems and judges)."""
    options = check_embedder_spec(spec)
    name = options.pop("name")
    return EMBEDDERS.get(name)(name, options, env, rate_limits)


def _message(err: ErrorDetails, cls: type[Embedder]) -> str:
    if err.get("type") == "extra_forbidden":
        return f"unknown option (allowed: {', '.join(['name', *cls.Config.model_fields]) or 'none'})"
    return err["msg"].removeprefix("Value error, ")
