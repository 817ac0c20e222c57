"""Where a relative path in an eval resolves: the eval's folder, then the working directory."""

from __future__ import annotations

from pathlib import Path


def resolve_input_path(value: str, eval_dir: Path) -> Path:
    """Relative to the eval's folder; falling back to the working directory (eval-harness).

    eval-harness resolves relative paths against the working directory, so a path that does
    not exist beside the eval is tried there; when neither exists, the eval-relative path is
    returned for the error message.
    """
    path = Path(value).expanduser()
    if path.is_absolute():
        return path
    beside_eval = (eval_dir / path).resolve()
    if beside_eval.exists():
        return beside_eval
    from_cwd = path.resolve()
    return from_cwd if from_cwd.exists() else beside_eval
