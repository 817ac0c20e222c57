"""Workspace containers and their owner markers; finding the ones a killed run left behind.

Each cell's workspace lives in a container folder ``<base_path>/evalh-ws-<pid>-<label>-<random>/``
holding ``owner.json`` (who made it) and ``tree/`` (what the system sees). The marker
sits beside the tree, never in it, so it is not part of any manifest. A container is
stale when its marker names this host and a process that is gone (or a recycled pid
with another start time). Folders without our prefix and a valid marker are never touched.
"""

from __future__ import annotations

import json
import os
import re
import socket
import tempfile
from pathlib import Path

from evalh_pipeline.common.processes import process_alive as _alive
from evalh_pipeline.common.processes import process_start as _process_start
from evalh_pipeline.common.trees import remove_tree

CONTAINER_PREFIX = "evalh-ws-"
OWNER_FILE = "owner.json"
_OWNER_TOOL = "evalh-workspace"
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def create_container(base_path: Path, label: str) -> Path:
    """A fresh container with its owner marker; ``label`` is only a readable hint."""
    base_path.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    safe = _LABEL_UNSAFE.sub("_", label)[:40].strip("_") or "cell"
    container = Path(tempfile.mkdtemp(prefix=f"{CONTAINER_PREFIX}{pid}-{safe}-", dir=base_path))
    marker = {"tool": _OWNER_TOOL, "pid": pid, "host": socket.gethostname(), "process_start": _process_start(pid)}
    (container / OWNER_FILE).write_text(json.dumps(marker), encoding="utf-8")
    return container


def is_stale(container: Path) -> bool:
    """True for our container whose owning process is gone (on this host)."""
    if not container.name.startswith(CONTAINER_PREFIX) or container.is_symlink() or not container.is_dir():
        return False
    try:
        marker = json.loads((container / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("tool") != _OWNER_TOOL or marker.get("host") != socket.gethostname():
        return False
    pid = marker.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    return not _alive(pid, marker.get("process_start"))


def recover_stale(base_path: Path) -> tuple[int, int]:
    """Remove the stale containers under ``base_path``; returns (containers, bytes) removed."""
    if not base_path.is_dir():
        return 0, 0
    removed = freed = 0
    for entry in os.scandir(base_path):
        container = Path(entry.path)
        if is_stale(container):
            try:
                freed += remove_tree(container)
                removed += 1
            except OSError:
                continue  # another run may be removing it at the same time
    return removed, freed
