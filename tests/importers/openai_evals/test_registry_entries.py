"""Fifty-odd entries of openai/evals' own registry (registry/evals/, MIT, see its README) import
with no error in their reports and `evalh run --dry-run` accepts each. The registry's samples
are Git LFS objects, so where a samples file is absent the check stands one sample in: what
is checked is the entries' definitions (class, args, modelgraded spec). The same check runs
over a whole registry with `python -m tests.support.import_openai_registry DIR`."""

from __future__ import annotations

from pathlib import Path

from evalh_pipeline.importers.openai_evals.registry import read_registry
from tests.support.import_openai_registry import MAPPED, check

REGISTRY = Path(__file__).parent / "registry"
OURS = {"parity.yaml"}  # the verdict-parity fixtures, written here


def test_fifty_registry_entries_import_with_no_error_and_dry_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    entries = [e for f in sorted((REGISTRY / "evals").glob("*.yaml")) if f.name not in OURS
               for e in read_registry(f) if e.grader in MAPPED]  # test-basic.yaml's TestMatch is not mapped
    lines = {e.name: check(REGISTRY, e, tmp_path / "data", tmp_path / "out" / e.name) for e in entries}
    assert {name: line for name, (ok, line) in lines.items() if not ok} == {}
    assert len(lines) >= 50
