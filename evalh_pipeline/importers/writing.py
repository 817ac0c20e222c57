"""Write an import's evals all at once: into a temporary folder beside the target, renamed
into place when complete, so a failed import leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalh_pipeline.config.dataset import select_cases
from evalh_pipeline.importers.report import BadSource, ImportReport
from evalh_pipeline.runner.loading import load_eval


@dataclass
class ImportedFiles:
    """One imported eval as it is written: its name, files (relative path -> text, or the bytes
    of a copied file), case count and report (already among the files as import-report.md)."""

    name: str
    files: dict[str, str | bytes]
    cases: int
    report: ImportReport


def write_imports(out: Path, imported: list[ImportedFiles],
                  check: Callable[[Path], None] | None = None) -> list[Path]:
    """Create ``out`` holding the imported evals (one: in ``out`` itself; several: one folder
    ``out/<name>`` each), or nothing if anything fails; ``check`` sees each eval's complete
    folder before ``out`` is renamed into place. Returns each eval's folder."""
    several = len(imported) > 1
    files = {(f"{found.name}/{path}" if several else path): content
             for found in imported for path, content in found.files.items()}

    def check_each(folder: Path) -> None:
        for found in imported:
            if check is not None:
                check(folder / found.name if several else folder)

    write_tree(out, files, check_each)
    return [out / found.name if several else out for found in imported]


def check_target(out: Path) -> None:
    """Raise :class:`BadSource` unless ``out`` can be created (absent, or an empty folder)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BadSource(str(out), None, "", "the output folder exists and is not empty (choose another -o)")


def write_tree(out: Path, files: dict[str, str | bytes], check: Callable[[Path], None] | None = None) -> None:
    """Create ``out`` holding ``files`` (relative path -> text, or bytes of a copied file), or
    nothing if anything fails; ``check`` sees the complete folder before it is renamed into
    place and may raise."""
    check_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.import-", dir=out.parent))
    try:
        staging.chmod(0o755)  # mkdtemp's folder is private; the eval is an ordinary folder
        for relative, content in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
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
