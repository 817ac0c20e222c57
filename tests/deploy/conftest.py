"""The deployment tests' shared parts: a PostgreSQL on loopback for the team's instance."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.redis_server import free_port


@pytest.fixture(scope="session")
def team_postgres_server() -> Iterator[tuple[int, str]]:
    """A PostgreSQL listening on 127.0.0.1 (its port) and its socket URL, for the session."""
    from tests.postgres_server import postgres_bin, running_postgres

    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    port = free_port()
    with running_postgres(tcp_port=port) as dsn:
        yield port, dsn


@pytest.fixture
def team_postgres(team_postgres_server) -> dict[str, str]:
    """A fresh database for this test's instance, as the DAGSTER_PG_* variables deploy/dagster.yaml reads."""
    import psycopg

    from tests.postgres_server import fresh_schema

    port, dsn = team_postgres_server
    name = fresh_schema()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    # trust authentication: the password is read (the file requires it) and not checked.
    return {"DAGSTER_PG_USERNAME": "postgres", "DAGSTER_PG_PASSWORD": "unused", "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(port), "DAGSTER_PG_DB": name}
