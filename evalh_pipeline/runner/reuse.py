"""``evalh run --reuse <previous run>``: start a run from the traces of an earlier one.

A trace of the previous run is copied into the new run when its cell (case, variant,
sample) is one of the new run's and its case, variant and fixture hashes (runner/hashes.py)
equal the new cell's: the system would be asked the same thing, configured the same way,
against the same fixture. Traces that errored are not reused (they are what a new run is
for), nor are traces written before hashes were recorded. The trace stage then runs only
the cells still without a trace, as on resume.

Each copied trace gets the new ``run_id`` and ``reused_from``: the run it was first made
in (kept through chains of reuse). ``reuse.json`` in the run directory records the lineage
and the counts.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from evalh_pipeline.runner.cells import completed_cells, iter_cases
from evalh_pipeline.runner.hashes import CellHashes, case_hash
from evalh_pipeline.store.jsonl import iter_raw_lines
from evalh_pipeline.store.records import traces_appender
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic

if TYPE_CHECKING:
    from evalh_pipeline.config.spec import EvalSpec

REUSE_RECORD = "reuse.json"


@dataclass
class ReuseStats:
    """Where a run's traces were reused from and how many."""

    from_run_id: str
    from_path: str
    reused: int = 0
    by_variant: dict[str, int] = field(default_factory=dict)
    # Previous traces of the run's cells not reused, by why.
    changed: int = 0
    errored: int = 0


def reuse_traces(spec: EvalSpec, run_dir: RunDirectory, previous: RunDirectory) -> ReuseStats:
    """Copy the reusable traces of ``previous`` into ``run_dir`` (cases already snapshotted)
    and record ``reuse.json``. A run that already recorded its reuse is left as it is."""
    record = run_dir.path / REUSE_RECORD
    if record.exists():
        return ReuseStats(**json.loads(record.read_text(encoding="utf-8")))
    if not previous.exists():
        raise FileNotFoundError(f"--reuse: {previous.path} is not a run directory (no run.json)")
    if previous.path.resolve() == run_dir.path.resolve():
        raise ValueError("--reuse: a run cannot reuse its own traces (use --resume)")
    stats = ReuseStats(from_run_id=previous.run_id, from_path=str(previous.path))
    hashes = CellHashes.for_run(spec, run_dir, spec.variants)
    samples = spec.config.run.samples_per_case
    wanted: dict[tuple[str, str, int], tuple[str, str]] = {}
    done = completed_cells(run_dir.traces, set(hashes.variants))
    for case in iter_cases(run_dir.cases):
        digest = case_hash(case)
        for variant, variant_digest in hashes.variants.items():
            if not case.runs_on(variant):
                continue  # no such cell by design: nothing to reuse
            for sample in range(samples):
                if (case.id, variant, sample) not in done:
                    wanted[(case.id, variant, sample)] = (digest, variant_digest)
    with traces_appender(run_dir.traces) as out:
        for _, line in iter_raw_lines(previous.traces):
            trace: dict[str, Any] = json.loads(line)
            key: tuple[str, str, int] = (trace.get("case_id", ""), trace.get("variant_name", ""), int(trace.get("sample") or 0))
            expected = wanted.get(key)
            if expected is None:
                continue
            if (trace.get("case_hash"), trace.get("variant_hash")) != expected or trace.get("fixture_hash") != hashes.fixture:
                stats.changed += 1
                continue
            if trace.get("error") is not None:
                stats.errored += 1
                continue
            del wanted[key]  # one trace per cell, should the previous run hold two
            trace["run_id"] = run_dir.run_id
            trace["reused_from"] = trace.get("reused_from") or previous.run_id
            out.write(json.dumps(trace, ensure_ascii=False, separators=(",", ":")))
            stats.reused += 1
            stats.by_variant[key[1]] = stats.by_variant.get(key[1], 0) + 1
    write_atomic(record, json.dumps(asdict(stats), indent=2))
    return stats


def recorded_reuse(run_dir: RunDirectory) -> dict[str, Any] | None:
    """The run's reuse.json, if it reused traces."""
    record = run_dir.path / REUSE_RECORD
    if not record.exists():
        return None
    reuse: dict[str, Any] = json.loads(record.read_text(encoding="utf-8"))
    return reuse
