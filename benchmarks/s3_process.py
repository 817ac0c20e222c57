#!/usr/bin/env python3
"""moto's S3 server as a process of its own, counting the S3 API traffic it serves.

The scale-out benchmark measures the run, not the emulator: a team's S3 is not on the machine
that runs its steps, so moto runs here in a process apart from the bench (whose CPU it would
otherwise share unseen), and its own CPU time is read from /proc and reported beside the
figures. Every request is counted per method (requests, bytes received, bytes sent) and the
counts so far are written to ``--stats`` as JSON on SIGUSR1 (:meth:`S3Process.counts`).

    python benchmarks/s3_process.py --port 5123 --stats /tmp/s3.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

READY_TIMEOUT_S = 60.0


class CountingApp:
    """A WSGI middleware: requests, bytes in and bytes out per HTTP method."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.counts: dict[str, dict[str, int]] = {}

    def _add(self, method: str, key: str, amount: int) -> None:
        with self.lock:
            entry = self.counts.setdefault(method, {"requests": 0, "bytes_in": 0, "bytes_out": 0})
            entry[key] += amount

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        method = environ.get("REQUEST_METHOD", "?")
        if "uploadId" in environ.get("QUERY_STRING", "") or "uploads" in environ.get("QUERY_STRING", ""):
            method += " (multipart)"
        # The run's files by name (its last path part), so a file moved more than once shows.
        method += " " + environ.get("PATH_INFO", "").rsplit("/", 1)[-1].split(".", 1)[-1]
        self._add(method, "requests", 1)
        self._add(method, "bytes_in", int(environ.get("CONTENT_LENGTH") or 0))
        for chunk in self.app(environ, start_response):
            self._add(method, "bytes_out", len(chunk))
            yield chunk


def serve(port: int, stats: Path) -> None:
    """Serve moto's S3 on 127.0.0.1:``port`` until SIGTERM, then write the counts to ``stats``."""
    import logging

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = CountingApp(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler)

    def stop(_signum: int, _frame: Any) -> None:
        threading.Thread(target=server.shutdown).start()

    def dump(_signum: int, _frame: Any) -> None:
        with app.lock:
            text = json.dumps(app.counts, indent=2) + "\n"
        part = stats.with_name(stats.name + ".tmp")
        part.write_text(text)
        os.replace(part, stats)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGUSR1, dump)
    server.serve_forever()


@dataclass
class S3Process:
    """The server process: its endpoint, process and where its counts go."""

    endpoint: str
    proc: subprocess.Popen
    stats: Path

    def cpu_s(self) -> float:
        """The CPU seconds (user + system) the server process has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def counts(self) -> dict[str, dict[str, int]]:
        """The requests and bytes per method served so far."""
        self.stats.unlink(missing_ok=True)
        os.kill(self.proc.pid, signal.SIGUSR1)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self.stats.exists():
            if time.monotonic() >= deadline:
                raise RuntimeError("moto's S3 server wrote no counts")
            time.sleep(0.05)
        counts: dict[str, dict[str, int]] = json.loads(self.stats.read_text())
        return counts


@contextmanager
def running_s3_process(stats: Path) -> Iterator[S3Process]:
    """moto's S3 server in a process of its own on 127.0.0.1 for the block."""
    from tests.support.redis_server import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--port", str(port), "--stats", str(stats)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                urllib.request.urlopen(endpoint, timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() >= deadline:
                    raise RuntimeError(f"moto's S3 server did not answer on {endpoint}") from None
                time.sleep(0.2)
        yield S3Process(endpoint, proc, stats)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stats", type=Path, required=True)
    args = parser.parse_args()
    serve(args.port, args.stats)


if __name__ == "__main__":
    main()
