"""A throwaway PostgreSQL server for the tests (Debian's `postgresql` package; never a mock).

One cluster per test session, in a temporary folder, reachable only through a Unix socket
in that folder (no TCP port, so parallel test runs never collide). Each test gets its own
schema (``schema:`` of the postgres store) and so sees only its own tables.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def postgres_bin() -> Path | None:
    """The folder of initdb/pg_ctl, newest version first (None: PostgreSQL is not installed)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]), reverse=True)
    if found:
        return Path(found[0]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_owner(cmd: list[str]) -> list[str]:
    # initdb refuses to run as root: run the server as the `postgres` user then.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def running_postgres(tcp_port: int | None = None) -> Iterator[str]:
    """Start a cluster; yields a libpq URL for its `postgres` database (over the socket).

    ``tcp_port``: also listen on 127.0.0.1 at that port (for clients that take a host and a
    port, such as a Dagster instance's ``postgres_db``)."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    # Not pytest's tmp_path: its parents are 0700 and the postgres user could not enter them.
    root = Path(tempfile.mkdtemp(prefix="evalh-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    try:
        subprocess.run(_as_owner([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                                  "--no-sync", "-E", "UTF8", "--locale=C"]),
                       check=True, capture_output=True, timeout=120)
        listen = f"-p {tcp_port} -c listen_addresses=127.0.0.1" if tcp_port else "-c listen_addresses=''"
        options = f"-F -k {sock} {listen} -c fsync=off -c max_connections=50"
        subprocess.run(_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-t", "60", "-l",
                                  str(root / "log"), "-o", options, "start"]),
                       check=True, capture_output=True, timeout=120)
        try:
            # The socket's name carries the port (.s.PGSQL.<port>).
            yield f"postgresql:///postgres?host={sock}&user=postgres" + (f"&port={tcp_port}" if tcp_port else "")
        finally:
            subprocess.run(_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                           capture_output=True, timeout=60)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def fresh_schema() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"
