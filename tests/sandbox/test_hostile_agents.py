"""Agents that try to get out of the sandbox: each is contained, its cell errors with the
limit named, and the host and the next cell are untouched."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from tests.sandbox.support import leftover_sandboxes, records, run_in, traces_by_variant, write_sandbox_eval

pytestmark = pytest.mark.integration

HOSTILE = {
    # name: (shell command, words the cell's error must contain)
    "writes_outside": ("echo owned > /etc/evalh-escape && echo owned > /evalh-escape", "read-only"),
    "opens_a_socket": ("nc -w 3 {host_ip} {port} </dev/null && echo connected", "no network"),
    "fork_bombs": ("b(){ b|b& }; b; sleep 3", "process limit (64 processes) reached"),
    "fills_the_disk": ("dd if=/dev/zero of=big bs=1M count=100", "disk limit (16 MiB for /workspace) reached"),
    "eats_memory": ("awk 'BEGIN { s = \"xxxxxxxxxxxxxxxx\"; while (1) s = s s }'", "memory limit (64 MiB) reached"),
    "leaves_a_process": ("setsid sleep 600 </dev/null >/dev/null 2>&1 & echo started", "processes left running"),
}


class _Listener:
    """A loopback TCP listener that counts connections (none may arrive from a sandbox)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self.thread.join()
        self.sock.close()


def _systems(listener: _Listener) -> str:
    lines = []
    for name, (command, _) in HOSTILE.items():
        shell = command.replace("{host_ip}", "192.0.2.1").replace("{port}", str(listener.port))
        lines.append(f"- name: {name}\n  adapter: cli\n  command: [sh, -c, {json.dumps(shell)}]\n  timeout_seconds: 60")
    # The well-behaved agent runs after them (max_concurrency 1): it must find a pristine fixture.
    lines.append("- name: tidy\n  adapter: cli\n  command: [sh, -c, 'echo version 2 > src/app.txt; ls -A']")
    return "\n".join(lines)


def test_each_escape_is_contained_and_named_and_the_next_cell_is_untouched(docker_engine, tmp_path, env):
    listener = _Listener()
    try:
        eval_path = write_sandbox_eval(tmp_path / "hostile", _systems(listener),
                                       workspace="memory: 64m\ndisk: 16m\npids: 64\ntmp_size: 8m",
                                       concurrency=1)
        done, run_dir = run_in(docker_engine, eval_path, env)
    finally:
        listener.close()
    traces = traces_by_variant(run_dir)
    for name, (_, named) in HOSTILE.items():
        error = traces[name]["error"]
        assert error is not None and error["type"] == "sandbox_limit", (name, error, done.stderr[-2000:])
        assert named in error["message"], (name, error["message"])
    # The host: nothing written outside, no connection arrived, no process or container left.
    assert not Path("/etc/evalh-escape").exists() and not Path("/evalh-escape").exists()
    assert listener.connections == 0
    assert leftover_sandboxes(docker_engine) == []
    # The next cell saw the fixture as it was, and only its own change was recorded.
    tidy = traces["tidy"]
    assert tidy["error"] is None and tidy["output"]["final_answer"].split() == ["README.md", "src"]
    changed = {r["variant_name"]: r for r in records(run_dir, "results.jsonl")}["tidy"]
    assert changed["detail"]["modified"] == ["src/app.txt"] and changed["detail"]["added"] == []
