"""The seed folder of a workspace eval (``workspace: {copy_from: ./seed}``), plain or a git repo."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def write_seed(seed: Path, readme: str, *, git: bool) -> Path:
    """``seed`` holding one ``README.md`` (``readme``); with ``git``, a repository with it committed."""
    seed.mkdir(parents=True)
    (seed / "README.md").write_text(readme)
    if git:
        subprocess.run([*GIT, "init", "-q", str(seed)], check=True)
        subprocess.run([*GIT, "-C", str(seed), "add", "-A"], check=True)
        subprocess.run([*GIT, "-C", str(seed), "commit", "-qm", "seed"], check=True)
    return seed
