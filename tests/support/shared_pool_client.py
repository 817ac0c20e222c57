"""One process of a run that shares a pool with others: ``python -m tests.support.shared_pool_client``.

It sends ``--requests`` chat requests at once to a server (tests/support/rate_limited_server.py),
each through the pool ``p`` (``--pool``: its limits as JSON) of a :class:`RateLimits` counted in
``--pools-url`` under ``--scope``, as a run's traces stage in another process would, and prints
one JSON line: the answers it got and the pools database's clock when it began and ended.

With ``--hold``, it only takes one lease of the pool (held ``--hold`` seconds), prints it and
waits to be killed: a process that dies holding a slot.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from evalh_pipeline.common.http_client import HttpClient
from evalh_pipeline.common.ratelimits import (PoolLimits, RateLimitAnswer, RateLimits, call_within_limit,
                                            rate_limit_of)
from evalh_pipeline.common.ratelimits.shared import DatabasePools
from evalh_pipeline.common.tls import default_ssl_context


async def _send(args: argparse.Namespace, limits: PoolLimits) -> dict[str, object]:
    rate_limits = RateLimits(pools={"p": limits}, max_concurrency=args.requests, pools_url=args.pools_url,
                             scope=args.scope)
    limiter = rate_limits.pool("p")
    database = DatabasePools(args.pools_url)
    began = database.now()
    async with HttpClient(connections=args.requests, tls=default_ssl_context(), timeout=args.timeout,
                          env_proxies=False) as client:

        async def one(number: int) -> int:
            async def attempt(_seconds_left: float) -> tuple[int, dict[str, str], bytes]:
                response = await client.request("POST", args.server, headers={"Authorization": args.key}, json={
                    "model": "m", "messages": [{"role": "user", "content": f"{args.name} {number}"}]})
                return response.status_code, dict(response.headers), response.content

            def answer_of(result: tuple[int, dict[str, str], bytes]) -> tuple[RateLimitAnswer | None, str]:
                return rate_limit_of(*result), result[2].decode()

            outcome = await call_within_limit(limiter, attempt, answer_of, timeout=args.timeout, retry=True)
            return 1 if outcome.result is not None and outcome.result[0] == 200 else 0

        answered = sum(await asyncio.gather(*(one(n) for n in range(args.requests))))
    ended = database.now()
    rate_limits.close()
    database.close()
    return {"answered": answered, "began": began, "ended": ended}


def _hold(args: argparse.Namespace, limits: PoolLimits) -> None:
    database = DatabasePools(args.pools_url)
    claim = database.claim(f"{args.scope}/p", limits, tokens=0.0, hold_s=args.hold)
    assert claim.lease is not None, "the pool had no free slot to hold"
    print(json.dumps({"lease": claim.lease.id, "expires_at": claim.lease.expires_at}), flush=True)
    sys.stdin.read()  # until killed (or the test closes our stdin)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="")
    parser.add_argument("--pools-url", required=True)
    parser.add_argument("--scope", required=True)
    parser.add_argument("--pool", required=True, help="the pool's limits, as JSON")
    parser.add_argument("--requests", type=int, default=1)
    parser.add_argument("--key", default="Bearer shared")
    parser.add_argument("--name", default="client")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--hold", type=float, default=None)
    args = parser.parse_args()
    limits = PoolLimits.model_validate(json.loads(args.pool))
    if args.hold is not None:
        _hold(args, limits)
        return
    print(json.dumps(asyncio.run(_send(args, limits))), flush=True)


if __name__ == "__main__":
    main()
