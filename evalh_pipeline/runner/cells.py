"""Cells: the (case x variant x sample) grid of a run, streamed in dataset order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.store.jsonl import count_lines, iter_raw_lines
from evalh_pipeline.store.records import CASES, TRACES

if TYPE_CHECKING:
    from evalh_pipeline.runner.shards import Shard

CellKey = tuple[str, str, int]  # (case_id, variant_name, sample)


@dataclass(frozen=True, slots=True)  # slots: built once per cell, a third cheaper
class Cell:
    """One (case, variant, sample) of a run's grid."""

    case: EvalCase
    variant: RunVariant
    sample: int

    @property
    def key(self) -> CellKey:
        return (self.case.id, self.variant.name, self.sample)


def iter_cases(cases_path: Path) -> Iterator[EvalCase]:
    return CASES.iter_file(cases_path)


def iter_cells(
    cases_path: Path, variants: list[RunVariant], samples: int, skip: set[CellKey] | frozenset[CellKey] = frozenset(),
    shard: Shard | None = None,
) -> Iterator[Cell]:
    """Every cell of the plan not in ``skip`` (of the cases ``shard`` holds: runner/shards.py);
    variants interleave so each case's cells run together. A case that names its ``variants``
    has no cells on the others."""
    cases = (iter_cases(cases_path) if shard is None or shard.whole else
             (CASES.decode(line, cases_path, number)  # the other shards' cases are not even parsed
              for position, (number, line) in enumerate(iter_raw_lines(cases_path)) if shard.holds(position)))
    for case in cases:
        for variant in variants:
            if not case.runs_on(variant.name):
                continue
            for sample in range(samples):
                if (case.id, variant.name, sample) not in skip:
                    yield Cell(case, variant, sample)


def count_cases(cases_path: Path) -> int:
    """The cases of a cases snapshot: its complete, non-blank lines."""
    return count_lines(cases_path)


def planned_cases(cases_path: Path, variant_names: list[str], shard: Shard | None = None) -> dict[str, int]:
    """How many cases of the snapshot (of those ``shard`` holds) run on each variant: all of
    them but the cases whose ``variants`` leave the variant out. Times the samples, the cells
    that exist by design."""
    planned = dict.fromkeys(variant_names, 0)
    for position, (_, line) in enumerate(iter_raw_lines(cases_path)):
        if shard is not None and not shard.whole and not shard.holds(position):
            continue
        # Most lines do not name variants: they skip the parse.
        (only,) = CASES.read_fields(line, "variants") if b'"variants"' in line else (None,)
        for name in variant_names:
            if only is None or name in only:
                planned[name] += 1
    return planned


def completed_cells(traces_path: Path, variant_names: set[str]) -> set[CellKey]:
    """Cells that already have a durable trace (the resume set)."""
    done: set[CellKey] = set()
    for _, line in iter_raw_lines(traces_path):
        case_id, variant, sample = TRACES.read_fields(line, "case_id", "variant_name", "sample")
        if variant in variant_names:
            done.add((case_id, variant, int(sample or 0)))
    return done
