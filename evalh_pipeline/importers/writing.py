"""Write an import's files all at once: into a temporary folder beside the target, renamed
into place when complete, so a failed import leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from evalh_pipeline.config.dataset import select_cases
from evalh_pipeline.importers.report import BadSource
from evalh_pipeline.runner.loading import load_eval


def check_target(out: Path) -> None:
    """Raise :class:`BadSource` unless ``out`` can be created (absent, or an empty folder)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BadSource(str(out), None, "", "the output folder exists and is not empty (choose another -o)")


def write_tree(out: Path, files: dict[str, str], check: Callable[[Path], None] | None = None) -> None:
    """Create ``out`` holding ``files`` (relative path -> text), or nothing if anything fails;
    ``check`` sees the complete folder before it is renamed into place and may raise."""
    check_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.import-", dir=out.parent))
    try:
        staging.chmod(0o755)  # mkdtemp's folder is private; the eval is an ordinary folder
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if check is not None:
            check(staging)
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def check_loads(folder: Path, env: dict[str, str], name: str = "eval.yaml") -> None:
    """Load ``folder``'s eval file ``name`` with ``env`` (placeholders for the variables it names)
    and read every case as ``evalh run --dry-run`` does, warnings as errors: an import writes
    only evals that load."""
    eval_path = folder / name
    spec = load_eval(eval_path, env, strict=True)
    for _ in select_cases(spec, "import-check"):
        pass
