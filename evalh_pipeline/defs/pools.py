"""Where a run's pools are counted when its steps may run in several processes or machines:
the Dagster instance's own database, handed to the engine as a plain URL.

Every process and machine that executes a step of the run reaches its instance (that is what
Dagster needs to record the step), so the instance's storage is the one place all of them
share: on PostgreSQL (a team's instance: dagster-postgres) the pools' two tables live in that
database; on a local instance (SQLite under ``DAGSTER_HOME``) in ``evalh/pools.db`` of the
instance folder, which every process of this machine sees. An ephemeral instance (in memory:
tests, ``materialize``) runs everything in one process: the pools stay in it.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg


def instance_pools_url(instance: dg.DagsterInstance) -> str | None:
    """The pools database of ``instance`` (None: count pools in this process)."""
    if instance.is_ephemeral:
        return None
    for storage in (instance.run_storage, getattr(instance, "_storage", None)):
        url = getattr(storage, "postgres_url", None)
        if isinstance(url, str) and url:
            return url
    folder = Path(instance.root_directory) / "evalh"
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'pools.db'}"
