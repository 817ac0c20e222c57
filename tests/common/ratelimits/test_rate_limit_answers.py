"""Which answers are rate limits, and how long each asks to wait."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from multidict import CIMultiDict

from evalh_pipeline.common.ratelimits import rate_limit_of, retry_after_seconds

NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=timezone.utc)


def test_a_429_is_a_rate_limit_with_or_without_a_wait():
    assert rate_limit_of(429, {}, b"", NOW).retry_after is None
    assert rate_limit_of(429, {"Retry-After": "3"}, b"", NOW).retry_after == 3


def test_a_503_is_a_rate_limit_only_when_it_says_when_to_come_back():
    assert rate_limit_of(503, {}, b"overloaded", NOW) is None
    assert rate_limit_of(503, {"retry-after": "7"}, b"", NOW).retry_after == 7


@pytest.mark.parametrize("body", [
    b'{"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}',
    b'{"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"}}',
])
def test_openai_and_anthropic_rate_limit_bodies_are_rate_limits_whatever_the_status(body):
    assert rate_limit_of(400, {}, body, NOW) is not None


def test_other_errors_and_successes_are_not_rate_limits():
    assert rate_limit_of(500, {}, b'{"error": {"type": "server_error"}}', NOW) is None
    assert rate_limit_of(400, {}, b'{"error": {"code": "insufficient_quota"}}', NOW) is None
    assert rate_limit_of(200, {"retry-after": "1"}, b"", NOW) is None


def test_retry_after_as_an_http_date_is_the_seconds_until_then():
    assert retry_after_seconds({"Retry-After": "Sat, 28 Nov 2026 12:00:30 GMT"}, NOW) == 30
    assert retry_after_seconds({"Retry-After": "Sat, 28 Nov 2026 11:00:00 GMT"}, NOW) == 0


def test_retry_after_ms_wins_over_whole_seconds():
    assert retry_after_seconds(CIMultiDict({"Retry-After": "1", "retry-after-ms": "25"}), NOW) == 0.025


@pytest.mark.parametrize("value, seconds", [("1s", 1), ("6m0s", 360), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("2.5", 2.5)])
def test_openai_reset_durations_are_read(value, seconds):
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": value}
    assert retry_after_seconds(headers, NOW) == pytest.approx(seconds)


def test_the_reset_of_the_exhausted_limit_is_the_wait():
    headers = {"x-ratelimit-remaining-requests": "10", "x-ratelimit-reset-requests": "1s",
               "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "6s"}
    assert retry_after_seconds(headers, NOW) == 6


def test_anthropic_resets_are_times_and_a_unix_time_reset_is_read_as_one():
    anthropic = {"anthropic-ratelimit-requests-remaining": "0",
                 "anthropic-ratelimit-requests-reset": "2026-11-28T12:00:05Z"}
    assert retry_after_seconds(anthropic, NOW) == 5
    assert retry_after_seconds({"x-ratelimit-reset": str(int(NOW.timestamp()) + 9)}, NOW) == 9


def test_unreadable_waits_are_not_invented():
    assert retry_after_seconds({"Retry-After": "soon"}, NOW) is None
    assert retry_after_seconds({"Retry-After": "-5"}, NOW) is None
