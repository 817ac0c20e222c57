"""A throwaway Redis server on loopback (Debian's ``redis-server``; never a mock).

Started in the foreground in a temporary folder, nothing saved to disk, on a free port of
127.0.0.1; stopped (and waited for) when the block ends, also when it raises.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT_S = 30.0


def redis_server_bin() -> str | None:
    """Debian's redis-server (None: not installed)."""
    return shutil.which("redis-server")


def free_port() -> int:
    """A TCP port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_redis() -> Iterator[str]:
    """Start redis-server on 127.0.0.1; yields its URL (``redis://127.0.0.1:PORT/0``)."""
    binary = redis_server_bin()
    if binary is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    root = Path(tempfile.mkdtemp(prefix="evalh-redis-"))
    port = free_port()
    log = (root / "log").open("wb")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(root)], stdout=log, stderr=subprocess.STDOUT, cwd=root)
    try:
        _wait_for_pong(proc, port, root / "log")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def _wait_for_pong(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        if time.monotonic() >= deadline:
            raise RuntimeError(f"redis-server did not answer on 127.0.0.1:{port} within {START_TIMEOUT_S} s")
        time.sleep(0.05)
