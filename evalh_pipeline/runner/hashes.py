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
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.models import EvalCase, RunVariant

if TYPE_CHECKING:
    from evalh_pipeline.config.spec import EvalSpec
    from evalh_pipeline.runner.cells import Cell
    from evalh_pipeline.store.run_dir import RunDirectory

SECRET_PLACEHOLDER = "<secret>"

# Canonical JSON; built once, as json.dumps would build it on every call (cases are hashed per cell).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(value: Any, secrets: Iterable[str] = ()) -> str:
    """The 16-hex-digit hash of ``value`` as canonical JSON, with ``secrets`` masked."""
    text = _CANONICAL.encode(value)
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, SECRET_PLACEHOLDER)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def case_hash(case: EvalCase) -> str:
    """The hash of what a case asks (``input``) and what it expects (``expected``)."""
    return content_hash({"input": case.input, "expected": case.expected.model_dump(mode="json")})


def variant_hash(variant: RunVariant, secrets: Iterable[str] = ()) -> str:
    """The hash of a variant's adapter, config, metadata and timeout (secrets masked)."""
    return content_hash(variant.model_dump(mode="json", exclude={"schema_version"}), secrets)


def fixture_hash(fixtures: dict[str, Any], covered: Iterable[str] = ()) -> str:
    """The hash of the fixture a run ran against, from the fingerprint recorded in run.json
    (store/fixtures.py): the versions of the workspace tree and of the files the eval names,
    except the ``covered`` paths (the eval file and the dataset: the variant and case hashes
    cover what in them decides a trace). So a commit that changes one case, or an evaluator,
    leaves the fixture hash as it was. A run recorded without path versions falls back to
    the commit and workspace version."""
    paths = fixtures.get("paths")
    if not isinstance(paths, dict):
        return content_hash({"commit": fixtures.get("commit", ""), "workspace": fixtures.get("workspace", "")})
    skip = set(covered)
    hashed: dict[str, Any] = {"paths": {rel: version for rel, version in paths.items() if rel not in skip}}
    # The commit or image each git_branch / docker variant ran (``systems``) is that variant's
    # own: it is in its variant hash (CellHashes), so a moved branch stales only its variant.
    return content_hash(hashed)


def covered_fixture_paths(spec: EvalSpec, fixtures: dict[str, Any] | None = None) -> set[str]:
    """How a fingerprint names the eval file and the dataset (relative to the git root or to
    the eval folder; store/fixtures.py): the fixture paths the variant and case hashes cover.
    The fingerprint records them (``covered``); for a run recorded before it did, git says
    where the root is."""
    recorded = (fixtures or {}).get("covered")
    if isinstance(recorded, list):
        return {str(name) for name in recorded}
    from evalh_pipeline.store.fixtures import git_root

    root = git_root(spec.eval_dir)
    names = set()
    for path in (spec.path.resolve(), spec.dataset_path.resolve()):
        names.add(Path(os.path.relpath(path, spec.eval_dir.resolve())).as_posix())
        if root is not None and path.is_relative_to(root):
            names.add(path.relative_to(root).as_posix())
    return names


def evaluator_hash(name: str, type_name: str, config: dict[str, Any], secrets: Iterable[str] = ()) -> str:
    """The hash of one evaluator's name, type and config (secrets masked)."""
    return content_hash({"name": name, "type": type_name, "config": config}, secrets)


def versioned_variant_hash(digest: str, version: str | None) -> str:
    """A variant's hash with what it ran from outside the eval (``git:<commit>``,
    ``image:<id>``; store/fixtures.py): the variant's configuration names a branch or a tag,
    the version says what they were. Without one the hash is the configuration's alone."""
    return content_hash({"variant": digest, "version": version}) if version else digest


@dataclass(frozen=True)
class CellHashes:
    """The variant and fixture hashes of one run, and how to stamp a trace with its hashes."""

    variants: dict[str, str]
    fixture: str
    # What each git_branch / docker variant is to run, as run.json recorded it (store/fixtures.py).
    versions: dict[str, str] = field(default_factory=dict)
    _recent_cases: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def for_run(cls, spec: EvalSpec, run_dir: RunDirectory, variants: Iterable[RunVariant]) -> CellHashes:
        """Hashes of ``variants`` as configured in ``spec`` and of the fixture recorded in run.json."""
        from evalh_pipeline.store.fixtures import recorded_fixtures, recorded_system_versions

        meta = run_dir.read_meta() if run_dir.exists() else {}
        fixtures = recorded_fixtures(meta)
        versions = recorded_system_versions(fixtures)
        return cls(variants={v.name: versioned_variant_hash(variant_hash(v, spec.secret_values), versions.get(v.name))
                             for v in variants},
                   fixture=fixture_hash(fixtures, covered_fixture_paths(spec, fixtures)), versions=versions)

    def of(self, cell: Cell) -> dict[str, str | None]:
        """The cell's ``case_hash``, ``variant_hash`` and ``fixture_hash``, as Trace fields."""
        # Cells of one case (its variants and samples) start close together: hash it once.
        recent = self._recent_cases
        found = recent.get(cell.case.id)
        if found is None:
            found = recent[cell.case.id] = case_hash(cell.case)
            if len(recent) > 1024:
                del recent[next(iter(recent))]
        return {"case_hash": found, "variant_hash": self.variants.get(cell.variant.name),
                "fixture_hash": self.fixture}


def file_version(path: Path, digest: str | None = None) -> str:
    """A version of a run file, from its content only: the hash of its complete lines
    (``digest``: their digest, kept by the appender that just wrote them; None: read). For
    results.jsonl of a run with a results store, the hash of the store's manifest, which
    names each evaluator's file by its content hash (store/results_store.py), so a 250 MB
    results file is not read to say it did not change."""
    from evalh_pipeline.store.jsonl import complete_lines_digest
    from evalh_pipeline.store.run_dir import RunDirectory

    run_dir = RunDirectory(path.parent)
    if path == run_dir.results and run_dir.results_manifest.is_file():
        return content_hash(["store", run_dir.results_manifest.read_text(encoding="utf-8")])
    if not path.exists():
        return "missing"
    return content_hash(digest or complete_lines_digest(path))
