"""Telling a rate-limit answer from other failures, and when the server says to come back.

A rate limit is an HTTP 429, a 503 that carries ``Retry-After`` (servers that shed load say
when to return), or any error whose body is a provider's rate-limit error: OpenAI's
``{"error": {"code": "rate_limit_exceeded"}}`` (also ``type: requests | tokens``) and
Anthropic's ``{"type": "error", "error": {"type": "rate_limit_error"}}``.

How long to wait comes from, in order: ``retry-after-ms`` (OpenAI, milliseconds),
``Retry-After`` (seconds or an HTTP-date), then the reset headers of the limits that are
exhausted: OpenAI's ``x-ratelimit-reset-requests`` / ``-tokens`` (durations such as ``1s``,
``6m0s``, ``20ms``), Anthropic's ``anthropic-ratelimit-*-reset`` (RFC 3339 times) and the
common ``x-ratelimit-reset`` / ``ratelimit-reset`` (seconds, or a Unix time when large).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

# OpenAI's durations: `1s`, `6m0s`, `1h2m3.5s`, `20ms`.
_DURATION = re.compile(r"^(?:(?P<h>\d+(?:\.\d+)?)h)?(?:(?P<m>\d+(?:\.\d+)?)m(?!s))?"
                       r"(?:(?P<s>\d+(?:\.\d+)?)s)?(?:(?P<ms>\d+(?:\.\d+)?)ms)?$")
# Provider error codes and types that mean "rate limited" (not "out of credit").
_BODY_MARKS = {"rate_limit_exceeded", "rate_limit_error", "rate_limited", "too_many_requests"}
# A reset header larger than this is a Unix time, not a number of seconds.
_EPOCH_THRESHOLD = 1_000_000_000


@dataclass(frozen=True)
class RateLimitAnswer:
    """A server's "too many requests": how long it asks to wait (None: it did not say)."""

    retry_after: float | None


def rate_limit_of(status: int, headers: Mapping[str, str], body: bytes | str | None = None,
                  now: datetime | None = None) -> RateLimitAnswer | None:
    """The rate limit this answer reports, or None when it is not one."""
    if 200 <= status < 300:
        return None
    wait = retry_after_seconds(headers, now)
    if status == 429 or (status == 503 and wait is not None) or (status >= 400 and _body_says_rate_limit(body)):
        return RateLimitAnswer(retry_after=wait)
    return None


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds the server asks to wait before the next request, from its headers (None: not said)."""
    now = now or datetime.now(timezone.utc)
    value = _header(headers, "retry-after-ms")
    if value is not None:
        seconds = _number(value)
        if seconds is not None:
            return seconds / 1000
    value = _header(headers, "retry-after")
    if value is not None:
        seconds = _number(value)
        if seconds is None:
            seconds = _http_date_from_now(value, now)
        if seconds is not None:
            return seconds
    return _reset_seconds(headers, now)


def _reset_seconds(headers: Mapping[str, str], now: datetime) -> float | None:
    """The wait the reset headers give: of the limits with nothing remaining, the longest;
    if no remaining count is given, the shortest reset."""
    exhausted, unknown = [], []
    for name, value in headers.items():
        lower = name.lower()
        if not lower.endswith("reset") and "-reset-" not in lower:
            continue
        seconds = _reset_value(lower, value, now)
        if seconds is None:
            continue
        remaining = _header(headers, lower.replace("reset", "remaining"))
        if remaining is not None and _number(remaining) == 0:
            exhausted.append(seconds)
        elif remaining is None:
            unknown.append(seconds)
    if exhausted:
        return max(exhausted)
    return min(unknown) if unknown else None


def _reset_value(name: str, value: str, now: datetime) -> float | None:
    value = value.strip()
    if name.startswith("anthropic-"):
        return _timestamp_from_now(value, now)
    match = _DURATION.match(value)
    if match and any(match.groupdict().values()) and not value.replace(".", "", 1).isdigit():
        parts = {k: float(v) for k, v in match.groupdict().items() if v}
        return parts.get("h", 0) * 3600 + parts.get("m", 0) * 60 + parts.get("s", 0) + parts.get("ms", 0) / 1000
    number = _number(value)
    if number is not None:
        return max(0.0, number - now.timestamp()) if number > _EPOCH_THRESHOLD else number
    return _timestamp_from_now(value, now)


def _number(value: str) -> float | None:
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if number >= 0 and number == number and number != float("inf") else None


def _http_date_from_now(value: str, now: datetime) -> float | None:
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - now).total_seconds())


def _timestamp_from_now(value: str, now: datetime) -> float | None:
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return _http_date_from_now(value, now)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - now).total_seconds())


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """The header ``name`` (lower case), whatever case the mapping spells it in."""
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def _body_says_rate_limit(body: bytes | str | None) -> bool:
    if not body:
        return False
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    if not isinstance(data, dict):
        return False
    error = data.get("error")
    found = [data.get("type"), data.get("code")]
    if isinstance(error, dict):
        found += [error.get("type"), error.get("code")]
    return any(isinstance(value, str) and value.lower() in _BODY_MARKS for value in found)
