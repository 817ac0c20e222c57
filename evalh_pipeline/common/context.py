"""What a plugin that calls out (an evaluator, its judge or embedder) is built with."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalh_pipeline.common.ratelimits import RateLimits


@dataclass(frozen=True)
class EvaluatorContext:
    """What an evaluator that calls out (a judge, an embedder) may need when it is built.

    Deterministic evaluators ignore it. ``env`` is read at construction only (credentials,
    base URLs), never inside :meth:`Evaluator.evaluate`, so verdicts stay reproducible.
    """

    eval_dir: Path = field(default_factory=Path.cwd)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    # Values of secret-looking ${VARS}: never written into a verdict's detail.
    secret_values: frozenset[str] = frozenset()
    # Where evaluators may keep caches across runs (e.g. judge verdicts); None disables them.
    cache_dir: Path | None = None
    max_concurrency: int = 4
    # The run's rate limits, shared with its systems (None: the evaluator keeps its own).
    rate_limits: RateLimits | None = field(default=None, compare=False, repr=False)
