"""A named pool's limits counted where every process of a run can see them: a database.

One process enforces a pool alone with its :class:`~evalh_pipeline.common.ratelimits.limiter.Limiter`
(the in-process backend: its own counters, nothing written anywhere). When a run's calls are
spread over processes or machines (Dagster's multiprocess or celery executor, shards), each
call of a pool also takes a lease from a :class:`PoolBackend` every process reaches:
:class:`DatabasePools`, over SQLAlchemy, on SQLite (a file: the processes of one machine) or
PostgreSQL (the team's Dagster instance database: many machines). What is shared, per pool
(and per run: ``scope``):

- **concurrency** (``max_concurrency``): one lease row per call in flight. A lease expires
  ``hold_s`` after it was taken (the call's own timeout, plus :data:`GRACE_S`): a process
  killed while holding one frees its slot at most then, since every claim first deletes the
  pool's expired leases. A call never outlives its timeout, so a live lease never expires early.
- **requests per second**: a token bucket of one request (no burst), refilled at the rate,
  so any window of t seconds admits at most 1 + rate·t requests, whichever process sends them.
- **tokens per minute**: a token bucket of a minute's tokens; a claim takes the tokens the
  limiter expects the call to use, its release settles them against what the answer reported.

A claim reads, checks and updates the pool's bucket row and its leases in one transaction
that holds the row (``BEGIN IMMEDIATE`` on SQLite, ``SELECT ... FOR UPDATE`` on PostgreSQL),
with the database's clock, so machines whose clocks differ still share one bucket. A
refused claim says how long to wait (a bucket's refill time; a short poll for a slot).
"""

from __future__ import annotations

import asyncio
import importlib.util
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from evalh_pipeline.common.ratelimits.settings import PoolLimits

GRACE_S = 5.0  # a lease outlives its call's timeout by this much (a slow release, clock steps)
SLOT_POLL_S = 0.02  # how often a process looks for a slot another process may have freed
MAX_WAIT_S = 1.0  # the longest a refused claim sleeps before it looks again
STALE_S = 86_400.0  # a pool's bucket unused this long is deleted (its run is over)

_metadata = sa.MetaData()
LEASES = sa.Table(
    "evalh_pool_leases", _metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("pool", sa.String(512), nullable=False, index=True),
    sa.Column("expires_at", sa.Float, nullable=False),
)
BUCKETS = sa.Table(
    "evalh_pool_buckets", _metadata,
    sa.Column("pool", sa.String(512), primary_key=True),
    sa.Column("requests", sa.Float, nullable=False),
    sa.Column("tokens", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)


@dataclass(frozen=True)
class Lease:
    """One call's hold on a shared pool: its row, the tokens it reserved, and when (the
    database's clock, seconds since the epoch) it was granted and expires."""

    id: str
    tokens: float
    granted_at: float
    expires_at: float


@dataclass(frozen=True)
class Claim:
    """A claim's answer: a lease, or how long to wait before claiming again."""

    lease: Lease | None
    wait_s: float = 0.0


class PoolBackend(Protocol):
    """Where the limits of named pools are counted for every process that reaches it."""

    def claim(self, pool: str, limits: PoolLimits, *, tokens: float, hold_s: float) -> Claim:
        """A lease on ``pool`` if its limits allow one more call now (``tokens``: what the call
        is expected to use; ``hold_s``: how long it may last), else how long to wait."""
        ...

    def release(self, pool: str, limits: PoolLimits, lease: Lease, *, tokens_used: float | None) -> None:
        """Hand ``lease`` back; ``tokens_used``: what the answer reported (None: the call used
        none that counts, and its reservation is given back)."""
        ...


class DatabasePools:
    """Pools counted in a SQLAlchemy database: ``sqlite:///path`` or ``postgresql://...``.

    The tables (``evalh_pool_leases``, ``evalh_pool_buckets``) are made on first use.
    """

    def __init__(self, url: str) -> None:
        self.url = sa.make_url(url)
        self.dialect = self.url.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ValueError(f"pools database {self.url.render_as_string(hide_password=True)}: "
                             "use sqlite:///<file> or postgresql://...")
        self.engine = _engine(self.url)
        self._ready = False

    def claim(self, pool: str, limits: PoolLimits, *, tokens: float, hold_s: float) -> Claim:
        """See :class:`PoolBackend`."""
        self._create_tables()
        with self.engine.begin() as conn:
            now = self._now(conn)
            bucket = self._bucket(conn, pool, limits, now)
            conn.execute(sa.delete(LEASES).where(LEASES.c.pool == pool, LEASES.c.expires_at <= now))
            requests, budget = _refilled(bucket, limits, now)
            wait = 0.0
            if limits.max_concurrency is not None:
                held = conn.execute(sa.select(sa.func.count()).select_from(LEASES)
                                    .where(LEASES.c.pool == pool)).scalar_one()
                if held >= limits.max_concurrency:
                    wait = SLOT_POLL_S
            if limits.requests_per_second is not None and requests < 1.0:
                wait = max(wait, (1.0 - requests) / limits.requests_per_second)
            if limits.tokens_per_minute is not None and tokens > 0 and budget < tokens:
                wait = max(wait, (tokens - budget) * 60.0 / limits.tokens_per_minute)
            if wait > 0:
                return Claim(None, min(wait, MAX_WAIT_S))
            lease = Lease(str(uuid.uuid4()), tokens, now, now + hold_s)
            conn.execute(sa.insert(LEASES).values(id=lease.id, pool=pool, expires_at=lease.expires_at))
            conn.execute(sa.update(BUCKETS).where(BUCKETS.c.pool == pool).values(
                requests=requests - 1.0 if limits.requests_per_second is not None else requests,
                tokens=budget - tokens if limits.tokens_per_minute is not None else budget, updated_at=now))
            return Claim(lease)

    def release(self, pool: str, limits: PoolLimits, lease: Lease, *, tokens_used: float | None) -> None:
        """See :class:`PoolBackend`."""
        with self.engine.begin() as conn:
            conn.execute(sa.delete(LEASES).where(LEASES.c.id == lease.id))
            if limits.tokens_per_minute is None:
                return
            now = self._now(conn)
            bucket = self._bucket(conn, pool, limits, now)
            _, budget = _refilled(bucket, limits, now)
            # As if the call had reserved exactly what it used; never above a full bucket.
            settled = min(float(limits.tokens_per_minute), budget + lease.tokens - (tokens_used or 0.0))
            conn.execute(sa.update(BUCKETS).where(BUCKETS.c.pool == pool).values(tokens=settled, updated_at=now))

    def leases(self, pool: str) -> list[Lease]:
        """The leases of ``pool`` in the database now, expired or not (for a run's checks)."""
        self._create_tables()
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(LEASES.c.id, LEASES.c.expires_at).where(LEASES.c.pool == pool)).all()
        return [Lease(row.id, 0.0, 0.0, row.expires_at) for row in rows]

    def now(self) -> float:
        """The database's clock (seconds since the epoch), which every lease is stamped with."""
        with self.engine.connect() as conn:
            return self._now(conn)

    def close(self) -> None:
        """Close the connections this process opened."""
        self.engine.dispose()

    # ------------------------------------------------------------------ inside a transaction

    def _now(self, conn: Connection) -> float:
        if self.dialect == "sqlite":
            return float(conn.exec_driver_sql("SELECT (julianday('now') - 2440587.5) * 86400.0").scalar_one())
        return float(conn.exec_driver_sql("SELECT extract(epoch FROM clock_timestamp())").scalar_one())

    def _bucket(self, conn: Connection, pool: str, limits: PoolLimits, now: float) -> Any:
        """The pool's bucket row, made full if missing, held until the transaction ends."""
        query = sa.select(BUCKETS).where(BUCKETS.c.pool == pool)
        if self.dialect == "postgresql":
            query = query.with_for_update()
        row = conn.execute(query).first()
        if row is not None:
            return row
        conn.execute(sa.delete(BUCKETS).where(BUCKETS.c.updated_at < now - STALE_S))
        full = {"pool": pool, "requests": 1.0, "tokens": float(limits.tokens_per_minute or 0), "updated_at": now}
        insert = postgresql.insert(BUCKETS) if self.dialect == "postgresql" else sqlite.insert(BUCKETS)
        conn.execute(insert.values(**full).on_conflict_do_nothing(index_elements=["pool"]))
        return conn.execute(query).one()

    def _create_tables(self) -> None:
        if self._ready:
            return
        try:
            _metadata.create_all(self.engine)
        except sa.exc.DBAPIError:
            # Another process made them between the check and the create: fine if they are there.
            if not sa.inspect(self.engine).has_table(BUCKETS.name):
                raise
            _metadata.create_all(self.engine)
        self._ready = True


def _refilled(bucket: Any, limits: PoolLimits, now: float) -> tuple[float, float]:
    """The bucket's requests (at most one) and tokens (at most a minute's) refilled to ``now``."""
    elapsed = max(0.0, now - bucket.updated_at)
    requests = bucket.requests
    if limits.requests_per_second is not None:
        requests = min(1.0, requests + elapsed * limits.requests_per_second)
    tokens = bucket.tokens
    if limits.tokens_per_minute is not None:
        tokens = min(float(limits.tokens_per_minute), tokens + elapsed * limits.tokens_per_minute / 60.0)
    return requests, tokens


def _engine(url: sa.URL) -> Engine:
    if url.get_backend_name() == "postgresql":
        if url.drivername in ("postgresql", "postgres"):
            # The driver installed: psycopg 3 (evalh's postgres extra) or psycopg2 (dagster-postgres).
            if not _has("psycopg") and not _has("psycopg2"):
                raise ValueError(f"pools database {url.render_as_string(hide_password=True)}: no PostgreSQL driver "
                                 "is installed (pip install 'evalh-pipeline[postgres]', or dagster-postgres)")
            url = url.set(drivername="postgresql+psycopg" if _has("psycopg") else "postgresql+psycopg2")
        return sa.create_engine(url, pool_pre_ping=True)
    engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 60})

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Transactions are begun by hand (below): pysqlite's own begin is deferred.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # The write lock from the first statement: two claims never read the same bucket.
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


class SharedPool:
    """One pool in one process's view of a :class:`PoolBackend`: the claims of this process go
    one at a time, first come first served (so a process's waiting calls do not all poll the
    database), in a worker thread (so the event loop never waits on the database)."""

    def __init__(self, backend: PoolBackend, pool: str, limits: PoolLimits) -> None:
        self.backend = backend
        self.pool = pool
        self.limits = limits
        self._turns: deque[asyncio.Future[None]] = deque()

    async def lease(self, *, tokens: float, hold_s: float) -> Lease:
        """Wait until the pool allows this call; its lease."""
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[None] = loop.create_future()
        self._turns.append(turn)
        if self._turns[0] is turn:
            turn.set_result(None)
        try:
            await turn
            while True:
                claim = await self._claim(tokens, hold_s + GRACE_S)
                if claim.lease is not None:
                    return claim.lease
                await asyncio.sleep(claim.wait_s)
        finally:
            self._turns.remove(turn)
            if self._turns and not self._turns[0].done():
                self._turns[0].set_result(None)

    async def release(self, lease: Lease, *, tokens_used: float | None) -> None:
        """Hand ``lease`` back (waited for: the next claim of this process then finds the slot)."""
        await asyncio.to_thread(self.backend.release, self.pool, self.limits, lease, tokens_used=tokens_used)

    def release_soon(self, lease: Lease) -> None:
        """Hand ``lease`` back without waiting (a cancelled call; if it never happens, it expires)."""
        asyncio.get_running_loop().run_in_executor(
            None, lambda: self.backend.release(self.pool, self.limits, lease, tokens_used=None))

    async def _claim(self, tokens: float, hold_s: float) -> Claim:
        work = asyncio.get_running_loop().run_in_executor(
            None, lambda: self.backend.claim(self.pool, self.limits, tokens=tokens, hold_s=hold_s))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            # The claim may still be granted in its thread: hand that lease straight back.
            work.add_done_callback(self._give_back)
            raise

    def _give_back(self, work: asyncio.Future[Claim]) -> None:
        if not work.cancelled() and work.exception() is None and (lease := work.result().lease) is not None:
            self.release_soon(lease)
