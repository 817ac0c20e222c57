"""Promoted baselines: one atomic pointer per eval, with the ones it replaced kept in history.

    <runs root>/baselines/<eval>/current.json    the promoted run (replaced by rename)
    <runs root>/baselines/<eval>/history.jsonl   every baseline that was replaced, oldest first

A crash mid-promotion leaves the old pointer in place: the history entry is written
first, the pointer last, and the pointer is only ever replaced whole.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalh_pipeline.store.run_dir import RunDirectory, write_atomic

BASELINES = "baselines"


@dataclass(frozen=True)
class Baseline:
    """Which run is an eval's promoted baseline, and since when.

    A dataclass, not a pydantic model: `evalh drift` reads the pointer and must start fast.
    """

    eval_name: str
    run_id: str
    run_dir: str
    promoted_at: datetime

    @classmethod
    def from_json(cls, text: str, where: Path) -> Baseline:
        try:
            raw: Any = json.loads(text)
            return cls(eval_name=str(raw["eval_name"]), run_id=str(raw["run_id"]), run_dir=str(raw["run_dir"]),
                       promoted_at=datetime.fromisoformat(str(raw["promoted_at"]).replace("Z", "+00:00")))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{where} is not a baseline pointer: {type(exc).__name__}: {exc}") from None

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps({"eval_name": self.eval_name, "run_id": self.run_id, "run_dir": self.run_dir,
                           "promoted_at": self.promoted_at.isoformat().replace("+00:00", "Z")}, indent=indent)

    def locate(self, runs_root: Path) -> Path:
        """The baseline's run directory: where it was promoted, else beside the pointer's runs root
        (a runs/ folder restored elsewhere, such as a CI cache on another machine)."""
        recorded = Path(self.run_dir)
        return recorded if RunDirectory(recorded).exists() else runs_root / self.run_id


def baseline_folder(runs_root: Path, eval_name: str) -> Path:
    return runs_root / BASELINES / eval_name


def current_baseline(runs_root: Path, eval_name: str) -> Baseline | None:
    """The promoted baseline of ``eval_name`` under ``runs_root``, if any.

    eval-harness promotes by making ``baselines/<eval>`` a symlink to the run folder; such a
    link (left by a committed eval-harness setup) is read as the promoted baseline until
    ``evalh promote`` replaces it.
    """
    folder = baseline_folder(runs_root, eval_name)
    if folder.is_symlink():
        target = folder.resolve()
        if not RunDirectory(target).exists():
            return None
        promoted = datetime.fromtimestamp(folder.lstat().st_mtime, tz=timezone.utc)
        return Baseline(eval_name=eval_name, run_id=target.name, run_dir=str(target), promoted_at=promoted)
    pointer = folder / "current.json"
    if not pointer.exists():
        return None
    return Baseline.from_json(pointer.read_text(encoding="utf-8"), pointer)


def promote(run_dir: RunDirectory) -> Baseline:
    """Make ``run_dir`` its eval's baseline; the previous one moves to the history."""
    from evalh_pipeline.store.jsonl import JsonlAppender

    meta = run_dir.read_meta()
    if not run_dir.summary.exists():
        raise ValueError(f"{run_dir.path} has no summary.yaml: only a finished run can be a baseline")
    runs_root = run_dir.path.parent
    folder = baseline_folder(runs_root, meta["eval_name"])
    if folder.is_symlink():  # eval-harness's pointer: replaced by ours (its target joins the history)
        legacy = current_baseline(runs_root, meta["eval_name"])
        folder.unlink()
        if legacy is not None and legacy.run_id != run_dir.run_id:
            folder.mkdir(parents=True, exist_ok=True)
            from evalh_pipeline.store.jsonl import JsonlAppender as _Appender

            with _Appender(folder / "history.jsonl") as history:
                history.write(legacy.to_json())
    folder.mkdir(parents=True, exist_ok=True)
    previous = current_baseline(runs_root, meta["eval_name"])
    if previous is not None and previous.run_id != run_dir.run_id:
        with JsonlAppender(folder / "history.jsonl") as history:
            history.write(previous.to_json())
    baseline = Baseline(
        eval_name=meta["eval_name"], run_id=run_dir.run_id, run_dir=str(run_dir.path),
        promoted_at=datetime.now(timezone.utc),
    )
    write_atomic(folder / "current.json", baseline.to_json(indent=2) + "\n")
    return baseline
