"""Ask a judge: cache, cost limit, one retry for transient failures and for bad answers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from typing import Any

from evalh_pipeline.common.context import EvaluatorContext
from evalh_pipeline.common.ratelimits import RateLimitAnswer, RateLimits, call_within_limit
from evalh_pipeline.llm.chat import JudgeBackend, JudgeError, JudgeRateLimited, JudgeReply, JudgeTransientError
from evalh_pipeline.llm.registry import resolve_backend
from evalh_pipeline.judges.cache import VerdictCache, cache_key
from evalh_pipeline.judges.prompt import BadJudgeAnswer, JudgePrompt, parse_answer
from evalh_pipeline.judges.settings import JudgeSettings
from evalh_pipeline.models import TraceMetrics
from evalh_pipeline.common.retrying import Backoff, retry_on_exception
from evalh_pipeline.common.pricing import PriceTable, apply_prices, builtin_price_table
from evalh_pipeline.common.masking import mask_text

ATTEMPTS = 2  # the first call and one retry, for transient failures and for bad answers alike
# A transient failure (5xx, timeout) is retried after a pause, never at once. A rate limit is
# waited out through the judge's limiter instead (within timeout_seconds).
TRANSIENT_BACKOFF = Backoff(attempts=ATTEMPTS, backoff_seconds=0.25)


class JudgeRateLimitedOut(JudgeError):
    """The judge server still answered with rate limits when the judge's time ran out."""

    error_type = "rate_limited"  # the result's error.type


class JudgeUnreachable(JudgeError):
    """The judge server could not be reached or failed (refused, timed out, HTTP 5xx) on
    every attempt."""

    error_type = "judge_unreachable"


class JudgeCostLimitExceeded(JudgeError):
    """The estimated cost of a judge call is over ``cost_limit_usd``: the call was not made.

    A limit the eval's author set: its result fails, as an evaluator that raised does."""

    error_type = "exception"


@dataclass(frozen=True)
class JudgeOutcome:
    """A validated answer and what obtaining it cost (all attempts)."""

    answer: dict[str, Any]
    prompt_sha256: str
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    cached: bool
    over_limit: str | None  # why the actual cost broke cost_limit_usd, if it did

    def detail(self, model: str, backend: str) -> dict[str, Any]:
        return {"judge_model": model, "judge_backend": backend, "judge_prompt_hash": self.prompt_sha256,
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "cost_usd": self.cost_usd,
                "cached": self.cached}


def _add(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


class Judge:
    """One configured judge. Built with the evaluator; reads ``context.env`` only here."""

    def __init__(self, settings: JudgeSettings, context: EvaluatorContext) -> None:
        resolved = resolve_backend(settings.model, settings.backend)
        self.settings = settings
        self.backend_name = resolved.name
        self.backend: JudgeBackend = resolved.build(
            context.env, base_url=settings.base_url, api_key_env=settings.api_key_env,
            timeout_seconds=settings.timeout_seconds, max_tokens=settings.max_tokens, temperature=settings.temperature)
        api_key = self.backend.settings.api_key
        self._secrets = context.secret_values | ({api_key} if api_key else set())
        # The run's limiter of this judge's pool or server + key (shared with systems that use it).
        limits = context.rate_limits or RateLimits(max_concurrency=context.max_concurrency)
        self._limiter = limits.scoped(settings.pool, self.backend.settings.base_url, api_key)
        if settings.price is not None:
            self._prices: PriceTable | None = PriceTable(as_of=date.today(), models={settings.model: settings.price})
        else:
            self._prices = builtin_price_table() if builtin_price_table().lookup(settings.model) else None
        self._cache = (VerdictCache(context.cache_dir / "judge")
                       if settings.cache and context.cache_dir is not None else None)

    def bypass_cache(self) -> None:
        """Call the judge every time from now on: no answer read from (or written to) the cache."""
        self._cache = None

    def cost(self, tokens_in: int | None, tokens_out: int | None) -> float | None:
        """USD for these tokens by the price table (the same rule as system costs), or None if unpriced."""
        if self._prices is None:
            return None
        metrics = apply_prices(TraceMetrics(token_input=tokens_in, token_output=tokens_out), self.settings.model,
                               self._prices)
        return metrics.cost_usd

    def estimate(self, prompt: JudgePrompt) -> float | None:
        """Worst case before the call: ~4 characters a token in, every allowed token out."""
        chars = len(prompt.system) + len(prompt.user) + len(json.dumps(prompt.schema))
        return self.cost(chars // 4 + 1, self.settings.max_tokens)

    def detail(self, outcome: JudgeOutcome) -> dict[str, Any]:
        return outcome.detail(self.settings.model, self.backend_name)

    async def ask(self, prompt: JudgePrompt) -> JudgeOutcome:
        """A validated answer to ``prompt``; raises :class:`JudgeError` (secrets masked)."""
        key = cache_key(self.backend_name, self.backend.settings.model, prompt.system, prompt.user, prompt.schema)
        if self._cache is not None and (hit := await self._cache.get(key)) is not None:
            try:
                return self._outcome(parse_answer(hit.text, prompt.schema), prompt, hit, cached=True)
            except BadJudgeAnswer:
                pass  # an entry from an older schema: ask again and overwrite it
        limit = self.settings.cost_limit_usd
        estimate = self.estimate(prompt)
        if limit is not None and estimate is not None and estimate > limit:
            raise JudgeCostLimitExceeded(f"judge call not made: estimated cost ${estimate:.6f} "
                                         f"(prompt + max_tokens={self.settings.max_tokens}) exceeds "
                                         f"cost_limit_usd ${limit}")
        spent = JudgeReply(text="", tokens_in=None, tokens_out=None, model=self.backend.settings.model)
        problem: BadJudgeAnswer | None = None
        for _ in range(ATTEMPTS):
            reply = await self._call(prompt)
            cost = reply.cost_usd if reply.cost_usd is not None else self.cost(reply.tokens_in, reply.tokens_out)
            spent = JudgeReply(text=reply.text, tokens_in=_add(spent.tokens_in, reply.tokens_in),
                               tokens_out=_add(spent.tokens_out, reply.tokens_out), model=reply.model,
                               cost_usd=None if cost is None and spent.cost_usd is None
                               else (spent.cost_usd or 0.0) + (cost or 0.0))
            try:
                answer = parse_answer(reply.text, prompt.schema)
            except BadJudgeAnswer as exc:
                problem = exc
                continue
            if self._cache is not None:
                await self._cache.put(key, spent)
            return self._outcome(answer, prompt, spent, cached=False)
        raise JudgeError(self._mask(f"{problem} (after {ATTEMPTS} attempts)"))

    def _outcome(self, answer: dict[str, Any], prompt: JudgePrompt, reply: JudgeReply, cached: bool) -> JudgeOutcome:
        limit = self.settings.cost_limit_usd
        over = None
        if limit is not None and reply.cost_usd is not None and reply.cost_usd > limit:
            over = f"judge cost ${reply.cost_usd:.6f} exceeded cost_limit_usd ${limit}"
        # Rounded so float noise (9.7199999e-05) never reaches results; far below a cent.
        cost = None if reply.cost_usd is None else round(reply.cost_usd, 10)
        return JudgeOutcome(answer=answer, prompt_sha256=prompt.sha256, tokens_in=reply.tokens_in,
                            tokens_out=reply.tokens_out, cost_usd=cost, cached=cached, over_limit=over)

    async def _call(self, prompt: JudgePrompt) -> JudgeReply:
        async def attempt(seconds_left: float) -> JudgeReply | JudgeError:
            try:
                return await retry_on_exception(
                    lambda: self.backend.complete(prompt.system, prompt.user, prompt.schema), TRANSIENT_BACKOFF,
                    lambda exc: isinstance(exc, JudgeTransientError) and not isinstance(exc, JudgeRateLimited))
            except JudgeError as exc:
                return exc

        def answer_of(result: JudgeReply | JudgeError) -> tuple[RateLimitAnswer | None, str]:
            if isinstance(result, JudgeRateLimited):
                return RateLimitAnswer(result.retry_after), self._mask(str(result))
            return None, ""

        def tokens_of(result: JudgeReply | JudgeError) -> int | None:
            if isinstance(result, JudgeError) or (result.tokens_in is None and result.tokens_out is None):
                return None
            return (result.tokens_in or 0) + (result.tokens_out or 0)

        outcome = await call_within_limit(self._limiter, attempt, answer_of, timeout=self.settings.timeout_seconds,
                                          retry=self._limiter.retry, tokens_of=tokens_of)
        result = outcome.result
        if result is None or isinstance(result, JudgeRateLimited):
            last = self._mask(str(result)) if result is not None else f"not sent: {outcome.gave_up}"
            why = f"; {outcome.gave_up}" if outcome.gave_up and result is not None else ""
            raise JudgeRateLimitedOut(f"{last} (rate limited {outcome.rate_limited} time(s), {outcome.waited_s:.1f} s "
                                      f"waited on {self._limiter.label}{why})")
        if isinstance(result, JudgeTransientError):
            raise JudgeUnreachable(self._mask(f"{result} (after {ATTEMPTS} attempts)"))
        if isinstance(result, JudgeError):
            raise JudgeError(self._mask(str(result)))
        return result

    def _mask(self, text: str) -> str:
        return mask_text(text, frozenset(self._secrets))
