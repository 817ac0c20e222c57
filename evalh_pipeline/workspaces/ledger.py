"""The run's workspace ledger: one line of bytes accounting per trace pass.

``workspace_accounting.jsonl`` in the run directory; passes over different variants may
run in parallel processes, so each appends one short line (a single O_APPEND write).
The summary sums the lines.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from evalh_pipeline.workspaces.accounting import WorkspaceAccounting

LEDGER_FILE = "workspace_accounting.jsonl"


def record_accounting(run_dir: Path, accounting: WorkspaceAccounting) -> None:
    """Append one pass's accounting to the run's ledger."""
    line = (json.dumps(accounting.as_dict(), sort_keys=True) + "\n").encode()
    fd = os.open(Path(run_dir) / LEDGER_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_accounting(run_dir: Path) -> WorkspaceAccounting | None:
    """The run's summed accounting, or None when it never had a workspace pass."""
    path = Path(run_dir) / LEDGER_FILE
    if not path.exists():
        return None
    total = WorkspaceAccounting()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            total.add(WorkspaceAccounting.from_dict(json.loads(line)))
    return total
