"""A pool shared by real processes through its database (common/ratelimits/shared.py): on
SQLite in a file (one machine) and on a real PostgreSQL (tests/postgres_server.py), each
process a `python -m tests.support.shared_pool_client` calling the rate-limited loopback
server, which records the requests in flight and when each arrived. Assertions are on those
counts and on the database's clock, never on how fast anything ran."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid

import pytest

from evalh_pipeline.common.ratelimits import PoolLimits
from evalh_pipeline.common.ratelimits.shared import GRACE_S, DatabasePools
from tests.support.rate_limited_server import RateLimitedServer

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def pools_url(request, tmp_path):
    """The URL of a pools database every process of the test reaches."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'pools.db'}"
    return request.getfixturevalue("postgres_dsn")


def _client(pools_url: str, scope: str, limits: dict, **options: object) -> subprocess.Popen:
    args = [sys.executable, "-m", "tests.support.shared_pool_client", "--pools-url", pools_url, "--scope", scope,
            "--pool", json.dumps(limits)]
    for name, value in options.items():
        args += [f"--{name.replace('_', '-')}", str(value)]
    return subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finished(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_processes_sharing_a_pool_of_two_never_have_more_than_two_requests_in_flight(pools_url):
    scope = uuid.uuid4().hex
    limits = {"max_concurrency": 2}
    with RateLimitedServer(latency=0.1) as server:
        clients = [_client(pools_url, scope, limits, server=server.url, requests=8, name=f"process{n}")
                   for n in range(3)]
        reports = [_finished(c) for c in clients]
    assert [r["answered"] for r in reports] == [8, 8, 8]
    assert server.total.answered == 24 and server.total.peak_in_flight <= 2
    # Every lease was handed back: nothing of the pool is left held.
    database = DatabasePools(pools_url)
    assert database.leases(f"{scope}/p") == []
    database.close()


def test_a_process_killed_holding_a_lease_blocks_the_others_only_until_the_lease_expires(pools_url):
    scope = uuid.uuid4().hex
    limits = {"max_concurrency": 1}
    holder = _client(pools_url, scope, limits, hold=4)
    assert holder.stdout is not None
    held = json.loads(holder.stdout.readline())
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    database = DatabasePools(pools_url)
    # While the dead process's lease lasts, its slot is taken; a claim after its expiry gets it.
    claim = database.claim(f"{scope}/p", PoolLimits(**limits), tokens=0, hold_s=1)
    if claim.lease is not None:
        assert claim.lease.granted_at >= held["expires_at"]
        database.release(f"{scope}/p", PoolLimits(**limits), claim.lease, tokens_used=None)
    with RateLimitedServer(latency=0.02) as server:
        report = _finished(_client(pools_url, scope, limits, server=server.url, requests=3))
    assert report["answered"] == 3 and report["ended"] >= held["expires_at"]
    assert server.total.peak_in_flight == 1
    assert database.leases(f"{scope}/p") == []
    database.close()


def test_requests_per_second_shared_by_two_processes_stay_under_the_limit_at_the_server(pools_url):
    scope = uuid.uuid4().hex
    rate = 5
    with RateLimitedServer(latency=0.01) as server:
        clients = [_client(pools_url, scope, {"requests_per_second": rate}, server=server.url, requests=15,
                           name=f"process{n}") for n in range(2)]
        reports = [_finished(c) for c in clients]
    assert [r["answered"] for r in reports] == [15, 15]
    arrivals = sorted(server.total.arrivals)
    assert len(arrivals) == 30
    # The pool's bucket holds one request: a second admits at most 1 + rate requests, across both
    # processes. The server sees them after their grant by the time a request takes to leave a
    # process (a worker thread's return, the event loop, the socket), which varies; one more
    # request per window covers a variation up to one spacing (1/rate = 200 ms). Two processes
    # limited each on its own would send 2 x rate a second.
    first = arrivals[0]
    windows: dict[int, int] = {}
    for arrived in arrivals:
        windows[int(arrived - first)] = windows.get(int(arrived - first), 0) + 1
    assert max(windows.values()) <= rate + 2, windows


def test_a_lease_expires_when_it_was_asked_to_and_a_released_slot_is_free_at_once(tmp_path):
    database = DatabasePools(f"sqlite:///{tmp_path / 'pools.db'}")
    limits = PoolLimits(max_concurrency=1)
    first = database.claim("run/p", limits, tokens=0, hold_s=30 + GRACE_S)
    assert first.lease is not None and first.lease.expires_at == pytest.approx(first.lease.granted_at + 30 + GRACE_S)
    refused = database.claim("run/p", limits, tokens=0, hold_s=30)
    assert refused.lease is None and refused.wait_s > 0
    database.release("run/p", limits, first.lease, tokens_used=None)
    assert database.claim("run/p", limits, tokens=0, hold_s=30).lease is not None
    database.close()


def test_a_token_quota_is_reserved_by_each_claim_and_settled_by_what_the_answer_used(pools_url):
    database = DatabasePools(pools_url)
    pool, limits = f"{uuid.uuid4().hex}/p", PoolLimits(tokens_per_minute=100)
    first = database.claim(pool, limits, tokens=60, hold_s=30)
    assert first.lease is not None
    # 40 left (and a refill of under two tokens a second): a second call of 60 waits.
    refused = database.claim(pool, limits, tokens=60, hold_s=30)
    assert refused.lease is None and refused.wait_s > 0
    # The first call used 10 of its 60: the 50 it did not use are back in the bucket.
    database.release(pool, limits, first.lease, tokens_used=10)
    second = database.claim(pool, limits, tokens=60, hold_s=30)
    assert second.lease is not None
    database.close()
