"""openai/evals' own registry files, read from the ``evals`` wheel on PyPI, as users have them.

``./dev test`` downloads the pinned wheel once into ``.venv/`` (``ensure_openai_evals_wheel``);
nothing of it is committed. A test asks for the registry files it needs (``evals/*.yaml``,
``modelgraded/*.yaml``, ``data/...``, paths under the wheel's ``evals/registry/``) and gets
them extracted under one folder laid out as openai/evals' ``evals/registry``. The registry's
data is ~750 MB unpacked, so data files are extracted on demand, not all at once.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

VERSION = "3.0.1.post1"
WHEEL = Path(__file__).resolve().parents[2] / ".venv" / f"openai-evals-{VERSION}" / f"evals-{VERSION}-py3-none-any.whl"
PREFIX = "evals/registry/"
MISSING = (f"OPENAI EVALS WHEEL MISSING: {WHEEL} is not there, so the tests over openai/evals' real registry "
           f"files are SKIPPED. `./dev test` downloads it (pip download evals=={VERSION} --no-deps -d {WHEEL.parent})")


class WheelRegistry:
    """A registry folder under ``root`` filled from the wheel: every ``evals/`` and
    ``modelgraded/`` file at once (small), data files when asked for."""

    def __init__(self, wheel: Path, root: Path) -> None:
        self.wheel = wheel
        self.root = root
        with zipfile.ZipFile(wheel) as archive:
            self._names = {n[len(PREFIX):] for n in archive.namelist() if n.startswith(PREFIX) and not n.endswith("/")}
        self.extract(*(n for n in self._names if n.startswith(("evals/", "modelgraded/"))))

    def has(self, relative: str) -> bool:
        """Whether the wheel's registry holds ``relative`` (a path under ``evals/registry/``)."""
        return relative in self._names

    def extract(self, *relative: str) -> Path:
        """Extract these registry files (once each) and return the registry folder."""
        wanted = [r for r in relative if not (self.root / r).exists()]
        if wanted:
            with zipfile.ZipFile(self.wheel) as archive:
                for name in wanted:
                    if name not in self._names:
                        raise KeyError(f"evals {VERSION}'s wheel has no evals/registry/{name}")
                    target = self.root / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(archive.read(PREFIX + name))
        return self.root

    def data(self, *relative: str) -> Path:
        """Extract these files of the registry's ``data/`` and return the registry folder."""
        return self.extract(*(f"data/{r}" for r in relative))

    def evals(self, name: str) -> Path:
        """The path of the registry file ``evals/<name>``."""
        return self.root / "evals" / name


# `./dev test` installs openai/evals' own oaieval here (ensure_oaieval: the wheel, --no-deps,
# beside tests/support/oaieval-requirements.txt), a venv of its own.
OAIEVAL = Path(__file__).resolve().parents[2] / ".venv" / f"oaieval-{VERSION}" / "bin" / "oaieval"


def oaieval_path() -> str | None:
    """``$EVALH_OAIEVAL`` (an ``oaieval`` executable), the one ``./dev test`` installs, or
    ``oaieval`` on PATH; None when there is none."""
    return os.environ.get("EVALH_OAIEVAL") or (str(OAIEVAL) if OAIEVAL.is_file() else shutil.which("oaieval"))


OAIEVAL_MISSING = (f"OAIEVAL MISSING: openai/evals' oaieval is not at {OAIEVAL} nor on PATH, so it is not run beside "
                   "evalh (./dev test installs it: ensure_oaieval; or set EVALH_OAIEVAL to its executable)")
