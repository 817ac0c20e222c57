"""Content hashes of what decides a cell's trace and a result's verdict.

Every trace records the hash of its case (input + expected), of its variant's config and
of the fixture it ran against; every result records the hash of its evaluator's config.
A trace whose three hashes are unchanged can be reused by a later run (``evalh run
--reuse``), and a result whose evaluator hash is unchanged need not be judged again
(``evalh re-evaluate``).

Hashes are the first 16 hex digits of the sha256 of canonical JSON (sorted keys, no
whitespace). Secret values are replaced before hashing: a hash of a short secret could be
brute-forced, and a rotated API key does not change what the system is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.models import EvalCase, RunVariant, Trace

if TYPE_CHECKING:
    from evalh_pipeline.config.spec import EvalSpec
    from evalh_pipeline.runner.cells import Cell
    from evalh_pipeline.store.run_dir import RunDirectory

SECRET_PLACEHOLDER = "<secret>"


def content_hash(value: Any, secrets: Iterable[str] = ()) -> str:
    """The 16-hex-digit hash of ``value`` as canonical JSON, with ``secrets`` masked."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, SECRET_PLACEHOLDER)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def case_hash(case: EvalCase) -> str:
    """The hash of what a case asks (``input``) and what it expects (``expected``)."""
    return content_hash({"input": case.input, "expected": case.expected.model_dump(mode="json")})


def variant_hash(variant: RunVariant, secrets: Iterable[str] = ()) -> str:
    """The hash of a variant's adapter, config, metadata and timeout (secrets masked)."""
    return content_hash(variant.model_dump(mode="json", exclude={"schema_version"}), secrets)


def fixture_hash(fixtures: dict[str, Any]) -> str:
    """The hash of the fixture a run ran against: the git commit and the workspace version
    recorded in run.json (the dataset's own hash is left out: each case has its hash)."""
    return content_hash({"commit": fixtures.get("commit", ""), "workspace": fixtures.get("workspace", "")})


def evaluator_hash(name: str, type_name: str, config: dict[str, Any], secrets: Iterable[str] = ()) -> str:
    """The hash of one evaluator's name, type and config (secrets masked)."""
    return content_hash({"name": name, "type": type_name, "config": config}, secrets)


@dataclass(frozen=True)
class CellHashes:
    """The variant and fixture hashes of one run, and how to stamp a trace with its hashes."""

    variants: dict[str, str]
    fixture: str

    @classmethod
    def for_run(cls, spec: EvalSpec, run_dir: RunDirectory, variants: Iterable[RunVariant]) -> CellHashes:
        """Hashes of ``variants`` as configured in ``spec`` and of the fixture recorded in run.json."""
        from evalh_pipeline.store.fixtures import recorded_fixtures

        meta = run_dir.read_meta() if run_dir.exists() else {}
        return cls(variants={v.name: variant_hash(v, spec.secret_values) for v in variants},
                   fixture=fixture_hash(recorded_fixtures(meta)))

    def stamp(self, trace: Trace, cell: Cell) -> None:
        """Record the cell's case, variant and fixture hashes in ``trace``."""
        trace.case_hash = case_hash(cell.case)
        trace.variant_hash = self.variants.get(cell.variant.name)
        trace.fixture_hash = self.fixture


def file_version(path: Path) -> str:
    """A version of a run file: the hash of its size, inode and mtime (cheap for a 100 MB
    file; appended to, rewritten or replaced, it changes; untouched, it stays)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return "missing"
    return content_hash([stat.st_size, stat.st_ino, stat.st_mtime_ns])
