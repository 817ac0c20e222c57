"""Rate limits as a real server imposes them: a loopback OpenAI-compatible server that limits
each API key (tests/support/rate_limited_server.py), called by `http` variants through the
trace stage. Assertions are on counts and limits (the server's and the run's record), never
on wall time."""

from __future__ import annotations

import asyncio
import json
import logging
import os

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval
from tests.support.rate_limited_server import KeyLimit, RateLimitedServer

pytestmark = pytest.mark.integration

KEY_A, KEY_B = "sk-test-key-aaaa1111", "sk-test-key-bbbb2222"


def _system(name: str, url: str, key_var: str, extra: str = "") -> str:
    return f"""
  - name: {name}
    adapter: http
    endpoint: {url}
    provider: openai_chat
    model: m
    headers: {{Authorization: "Bearer ${{{key_var}}}"}}
    request_template: {{messages: [{{role: user, content: "{{{{ case.input.answer }}}}"}}]}}
    timeout_seconds: 30{extra}
"""


def _run(tmp_path, systems: str, *, cases: int, run_yaml: str):
    path = write_eval(tmp_path / "toy", cases=cases, systems=systems)
    text = path.read_text().replace("run:\n  max_concurrency: 4\n", "run:\n" + run_yaml)
    path.write_text(text)
    spec = load_eval(path, env={**os.environ, "KEY_A": KEY_A, "KEY_B": KEY_B})
    info = prepare_cases(spec, new_run_id(spec.name))
    stats = asyncio.run(produce_traces(spec, info.run_dir))
    traces = [json.loads(line) for _, line in iter_lines(info.run_dir.traces)]
    records = ([json.loads(line) for line in info.run_dir.rate_limits.read_text().splitlines()]
               if info.run_dir.rate_limits.exists() else [])
    return stats, traces, records


def test_a_rate_limited_key_is_waited_out_and_no_cell_errors(tmp_path):
    # 4 requests a second against 8 at once: most first answers are 429s.
    with RateLimitedServer({f"Bearer {KEY_A}": KeyLimit(rate=4, burst=1)}) as server:
        stats, traces, records = _run(tmp_path, _system("base", server.url, "KEY_A"), cases=10,
                                      run_yaml="  max_concurrency: 8\n")
    assert stats.cells_errored == 0 and len(traces) == 10
    assert all(t["output"]["final_answer"].startswith("answer to") for t in traces)
    key = server.stats[f"Bearer {KEY_A}"]
    assert key.answered == 10 and key.rate_limited > 0
    # Each 429 a cell met is on its trace; the run's record has the limit's totals and levels.
    assert sum(t["metrics"]["custom"].get("rate_limited", 0) for t in traces) == key.rate_limited
    [record] = records
    assert record["stage"] == "traces" and record["limit"] == f"127.0.0.1:{server.port} (credential 1)"
    assert record["rate_limited"] == key.rate_limited and record["succeeded"] == 10
    levels = [level for _, level in record["levels"]]
    assert levels[0] == 8 and min(levels) < 8 and all(1 <= level <= 8 for level in levels)
    assert KEY_A not in json.dumps(records)


def test_a_fixed_pool_caps_what_is_in_flight_at_the_server_for_every_variant_in_it(tmp_path):
    with RateLimitedServer(latency=0.05) as server:
        systems = (_system("base", server.url, "KEY_A", "\n    pool: small") +
                   _system("other", server.url, "KEY_B", "\n    pool: small"))
        stats, traces, records = _run(tmp_path, systems, cases=15, run_yaml=(
            "  max_concurrency: 10\n  executor:\n    pools: {small: 3}\n"))
    assert stats.cells_errored == 0 and len(traces) == 30
    assert server.total.answered == 30 and server.total.rate_limited == 0
    assert server.total.peak_in_flight <= 3
    [record] = records
    assert record["limit"] == "pool small" and record["ceiling"] == 3 and record["max_in_flight"] <= 3


def test_a_pool_with_requests_per_second_keeps_under_a_quota_the_server_enforces(tmp_path):
    # The server allows 20/s with a burst of 4; the pool sends at most 8/s, one every 125 ms:
    # no 429 at all, unless a stall of half a second bunched five requests at the server.
    limits = {f"Bearer {KEY_A}": KeyLimit(rate=20, burst=4)}
    with RateLimitedServer(limits) as server:
        stats, traces, records = _run(tmp_path, _system("base", server.url, "KEY_A", "\n    pool: quota"), cases=12,
                                      run_yaml="  max_concurrency: 12\n  executor:\n    pools:\n"
                                               "      quota: {requests_per_second: 8}\n")
    assert stats.cells_errored == 0
    assert server.total.rate_limited == 0 and server.total.answered == 12
    assert records[0]["requests_per_second"] == 8


def test_two_keys_with_different_limits_do_not_hold_each_other_back(tmp_path):
    limits = {f"Bearer {KEY_A}": KeyLimit(rate=3, burst=1)}  # B: no limit at the server
    with RateLimitedServer(limits) as server:
        systems = _system("base", server.url, "KEY_A") + _system("other", server.url, "KEY_B")
        stats, traces, records = _run(tmp_path, systems, cases=8,
                                      run_yaml="  max_concurrency: 8\n")
    assert stats.cells_errored == 0
    by_limit = {r["limit"]: r for r in records}
    slow = by_limit[f"127.0.0.1:{server.port} (credential 1)"]
    fast = by_limit[f"127.0.0.1:{server.port} (credential 2)"]
    assert slow["rate_limited"] > 0 and min(level for _, level in slow["levels"]) < 8
    # The other key's controller never saw a rate limit and never cut its level.
    assert fast["rate_limited"] == 0 and [level for _, level in fast["levels"]] == [8]
    assert server.stats[f"Bearer {KEY_B}"].rate_limited == 0
    assert all(t["metrics"]["custom"].get("rate_limited") is None for t in traces if t["variant_name"] == "other")


def test_a_server_that_refuses_everything_ends_the_run_with_every_cell_rate_limited(tmp_path):
    limits = {f"Bearer {KEY_A}": KeyLimit(rate=0, burst=0)}
    with RateLimitedServer(limits) as server:
        stats, traces, records = _run(tmp_path, _system("base", server.url, "KEY_A"), cases=12, run_yaml=(
            "  max_concurrency: 3\n  rate_limits: {budget_seconds: 1.5}\n"))
    assert stats.cells_run == 12 and stats.errors_by_type == {"rate_limited": 12}
    assert {t["error"]["type"] for t in traces} == {"rate_limited"}
    # The server's last message is kept, the key it quoted masked.
    assert all("rate_limit_exceeded" in t["error"]["message"] or "Rate limit reached" in t["error"]["message"]
               for t in traces)
    assert KEY_A not in json.dumps(traces) and "***MASKED***" in json.dumps(traces)
    assert records[0]["gave_up"] and "budget_seconds" in records[0]["gave_up"]
    # Once given up, no further request is sent: far fewer requests than cells x attempts.
    assert server.total.requests < 12 * 10


def test_a_retry_after_asking_for_hours_is_capped_with_a_warning_naming_the_server(tmp_path, caplog):
    limits = {f"Bearer {KEY_A}": KeyLimit(rate=1, burst=1, retry_after=7200)}
    with RateLimitedServer(limits) as server, caplog.at_level(logging.WARNING):
        stats, traces, records = _run(tmp_path, _system("base", server.url, "KEY_A"), cases=3, run_yaml=(
            "  max_concurrency: 3\n  rate_limits: {max_wait_seconds: 0.5}\n"))
    assert stats.cells_errored == 0
    warnings = [r.getMessage() for r in caplog.records if "asked to wait 7200 s" in r.getMessage()]
    assert len(warnings) == 1 and f"127.0.0.1:{server.port}" in warnings[0]
    assert records[0]["capped_waits"] >= 1


def test_without_retry_the_first_rate_limit_errors_the_cell_as_rate_limited(tmp_path):
    limits = {f"Bearer {KEY_A}": KeyLimit(rate=0, burst=0)}
    with RateLimitedServer(limits) as server:
        stats, traces, _ = _run(tmp_path, _system("base", server.url, "KEY_A"), cases=2, run_yaml=(
            "  max_concurrency: 2\n  rate_limits: {retry: false}\n"))
    assert stats.errors_by_type == {"rate_limited": 2} and server.total.requests == 2
    assert all("HTTP 429 (rate limited)" in t["error"]["message"] for t in traces)


def test_a_refusing_key_never_holds_back_a_variant_on_another_key(tmp_path):
    # Two lanes in all. Key A refuses everything for 5 s before the run gives up on it; had
    # A's cells held the run's lanes, B's would have waited those 5 s behind them.
    limits = {f"Bearer {KEY_A}": KeyLimit(rate=0, burst=0)}
    with RateLimitedServer(limits) as server:
        systems = _system("base", server.url, "KEY_A") + _system("other", server.url, "KEY_B")
        stats, traces, records = _run(tmp_path, systems, cases=6, run_yaml=(
            "  max_concurrency: 2\n  rate_limits: {budget_seconds: 5}\n"))
    assert stats.errors_by_type == {"rate_limited": 6} and stats.by_variant["other"]["errored"] == 0
    order = [t["variant_name"] for t in traces]  # as the traces were written
    assert order[:6] == ["other"] * 6
    # The run's max_concurrency held over both limits together.
    assert server.total.peak_in_flight <= 2 and all(r["max_in_flight"] <= 2 for r in records)


def test_without_a_limit_the_traces_carry_nothing_of_the_controller(tmp_path):
    with RateLimitedServer() as server:
        stats, traces, records = _run(tmp_path, _system("base", server.url, "KEY_A") + _system("other", server.url, "KEY_A"),
                                      cases=6, run_yaml="  max_concurrency: 4\n")
    assert stats.cells_errored == 0 and server.total.rate_limited == 0
    assert all("rate_limited" not in t["metrics"]["custom"] and "queue_wait_ms" not in t["metrics"]["custom"]
               for t in traces)
    # The record says what went through the limit, its level never cut, no pace set.
    [record] = records
    assert record["requests"] == 12 and [level for _, level in record["levels"]] == [4] and record["paces"] == []


def test_a_pool_with_tokens_per_minute_keeps_under_a_token_quota_the_server_enforces(tmp_path):
    # 6,000 tokens a minute at the server (a minute's worth at the start, as OpenAI's bucket),
    # 100 per answer: 60 answers at once, then one a second. The pool is set a little under
    # the quota (as the README advises: the server sees the requests a network's jitter closer
    # together than they were sent) and sends the 66 requests without a single 429.
    limits = {f"Bearer {KEY_A}": KeyLimit(rate=1000, burst=1000, tokens_per_minute=6000)}
    with RateLimitedServer(limits, usage=(60, 40)) as server:
        stats, traces, records = _run(tmp_path, _system("base", server.url, "KEY_A", "\n    pool: tokens"), cases=66,
                                      run_yaml="  max_concurrency: 16\n  executor:\n    pools:\n"
                                               "      tokens: {tokens_per_minute: 5700}\n")
    assert stats.cells_errored == 0 and len(traces) == 66
    assert server.total.rate_limited == 0 and server.total.answered == 66
    [record] = records
    assert record["tokens_per_minute"] == 5700 and record["tokens"] == 6600 and record["rate_limited"] == 0
