"""Shards: one stage's work cut into parts that run in other processes (or machines), and
put back together into the run's one contract file (traces.jsonl; results.jsonl, whose
shards judge the lines of traces.jsonl by the same rule over their positions).

A :class:`Shard` is a value (index, count). Its plan is by position in the run's cases
snapshot: case number ``p`` (0-based, in cases.jsonl order) belongs to shard ``p % count``,
with every variant and sample of that case. Why positions and not a hash of the cell key:
the snapshot never changes for a run, so the plan is the same in every process and on every
``--resume`` without hashing anything; neighbouring cases (often of a similar cost) are dealt
round-robin, so shards come out the same size; and a case's cells stay together, in one
process, as they run today. A later stage (judging) can take the same value over its own
positions (trace lines).

With one shard the stage writes the contract file itself (``traces.jsonl``), as it always
did. With more, each shard appends to its own part file, ``shards/traces.<k>-of-<n>.jsonl``
(one writer per file: shards on other machines cannot share one append-only file), under a
lock of its own, and :func:`collect_traces` appends the parts' complete lines to
traces.jsonl once every shard is in. The parts are transient: removed once traces.jsonl is
fsynced, and read by :func:`trace_files` (the resume set) while they exist.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.config.schema import AUTO_EXECUTOR, OUT_OF_PROCESS_EXECUTORS
from evalh_pipeline.runner.cells import CellKey, completed_cells, count_cases
from evalh_pipeline.store.jsonl import JsonlAppender, iter_raw_lines, set_aside_torn_tail
from evalh_pipeline.store.locking import locked
from evalh_pipeline.store.records import CASES, TRACES
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic

if TYPE_CHECKING:
    from evalh_pipeline.config import EvalSpec
    from evalh_pipeline.config.schema import RunConfig

PARTS_FOLDER = "shards"


@dataclass(frozen=True)
class Shard:
    """Part ``index`` (0-based) of ``count`` parts of a stage's work."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index} of {self.count}: the index must be in 0..{self.count - 1}")

    @property
    def label(self) -> str:
        """``2-of-4`` (numbered from 1): the name of its part file and of its Dagster step."""
        return f"{self.index + 1}-of-{self.count}"

    @property
    def whole(self) -> bool:
        """One shard: the stage writes the contract file itself, as a run without shards."""
        return self.count == 1

    def holds(self, position: int) -> bool:
        """Whether item ``position`` (0-based, in the stage's input order) is this shard's."""
        return self.count == 1 or position % self.count == self.index


WHOLE = Shard()


def all_shards(count: int) -> list[Shard]:
    """The ``count`` shards of a plan, in order."""
    return [Shard(index, count) for index in range(count)]


def shard_count(run: RunConfig, cells: int) -> int:
    """How many shards a run of ``cells`` cells gets: ``run.shards``, or for ``auto`` one per
    ``run.cells_per_shard`` cells, at most one per core, on an executor that runs steps in
    other processes (always 1 in process, ``auto`` included: shards there would only take turns)."""
    if run.shards != "auto":
        return run.shards
    if run.executor.type not in OUT_OF_PROCESS_EXECUTORS:
        return 1
    return max(1, min(usable_cores(), math.ceil(cells / run.cells_per_shard)))


def usable_cores() -> int:
    """The processors this process may run on (its affinity, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# The adapters whose cells spend their CPU in the run's own process (the harness's work per
# cell and the target's): more processes run more of them at once. Every other waits on a
# server, a program or a container (http, cli, docker, git_branch, user_simulator) or runs its
# target in worker processes already (python_function with isolation: process): its speed is
# its concurrency, which a process more would only multiply.
IN_PROCESS_ADAPTERS = frozenset({"python_function", "replay"})


def cpu_bound(spec: EvalSpec) -> bool:
    """Whether every system of ``spec`` runs its cells in the run's own process (CPU-bound)."""
    return all(system.adapter in IN_PROCESS_ADAPTERS and (system.model_extra or {}).get("isolation") != "process"
               for system in spec.config.systems)


@dataclass(frozen=True)
class Layout:
    """Where a run's steps run (``run.executor.type``) and how many shards its cells are cut into."""

    executor: str
    shards: int


def choose_layout(run: RunConfig, cells: int, *, cores: int, cpu_bound: bool) -> Layout:
    """The executor and shard count of a run of ``cells`` cells (``run.executor.type`` and
    ``run.shards``, each possibly ``auto``) on a machine of ``cores`` processors.

    What the user set wins: an executor named keeps its type (``auto`` shards by
    :func:`shard_count`); ``shards: N`` keeps N, run in N processes when the executor is
    ``auto`` and there is more than one core (so ``--shards 1`` is one process). Both ``auto``:
    a CPU-bound run (:func:`cpu_bound`) of at least two shards' worth of cells
    (``run.cells_per_shard`` each) on a machine of more than one core spreads over
    ``min(cores, cells // cells_per_shard)`` shards on the multiprocess executor; any other
    run is one shard in process (benchmarks/README.md: where a second process pays).
    """
    if run.executor.type != AUTO_EXECUTOR:
        return Layout(run.executor.type, shard_count(run, cells))
    if run.shards != "auto":
        return Layout("multiprocess" if run.shards > 1 and cores > 1 else "in_process", run.shards)
    count = min(cores, cells // run.cells_per_shard) if cpu_bound else 1
    return Layout("multiprocess", count) if count >= 2 else Layout("in_process", 1)


def laid_out(spec: EvalSpec, layout: Layout) -> EvalSpec:
    """``spec`` with ``run.executor.type`` and ``run.shards`` set to ``layout``'s."""
    from dataclasses import replace

    run = spec.config.run
    executor = run.executor.model_copy(update={"type": layout.executor})
    run = run.model_copy(update={"executor": executor, "shards": layout.shards})
    return replace(spec, config=spec.config.model_copy(update={"run": run}))


def record_shard_count(run_dir: RunDirectory, count: int) -> None:
    """Write the run's shard count into its run.json: every pass of the run (``--resume``,
    a re-execution) plans the same shards."""
    meta = json.loads(run_dir.meta.read_text(encoding="utf-8"))
    meta["shards"] = count
    write_atomic(run_dir.meta, json.dumps(meta, indent=2) + "\n")


def recorded_shards(run_dir: RunDirectory) -> list[Shard]:
    """The run's shards as its run.json records them (a run from before shards: one)."""
    count = run_dir.read_meta().get("shards", 1)
    return all_shards(count if isinstance(count, int) and count >= 1 else 1)


def part_path(run_dir: RunDirectory, shard: Shard) -> Path:
    """Where ``shard`` appends its traces: traces.jsonl itself for the whole run, else its part file."""
    if shard.whole:
        return run_dir.traces
    return run_dir.path / PARTS_FOLDER / f"traces.{shard.label}.jsonl"


def writer_lock(run_dir: RunDirectory, shard: Shard) -> Path:
    """The lock a shard's writer holds: the run's (store/locking.py) for the whole run, else
    its part file's own, so the shards of one run write at the same time."""
    if shard.whole:
        return run_dir.lock
    return _part_lock(part_path(run_dir, shard))


def _part_lock(part: Path) -> Path:
    """The lock of a part file, beside the run's own ``.lock`` (never removed: a lock file
    removed while another process waits on it would let two holders in)."""
    return part.parent.parent / f".lock.{part.name.removesuffix('.jsonl')}"


def results_part(run_dir: RunDirectory, shard: Shard) -> Path:
    """The folder where ``shard`` (one of several) leaves the new results it judged, one file
    per evaluator, until the results stage puts them into the store (runner/evaluation.py)."""
    return run_dir.path / PARTS_FOLDER / f"results.{shard.label}"


def results_part_lock(run_dir: RunDirectory, shard: Shard) -> Path:
    """The lock a shard's judging holds: its own, so the shards of one run judge at the same time."""
    return _part_lock(results_part(run_dir, shard))


def trace_parts(run_dir: RunDirectory) -> list[Path]:
    """The part files not collected yet, in name order (none: a run without shards)."""
    folder = run_dir.path / PARTS_FOLDER
    if not folder.is_dir():
        return []
    return sorted(folder.glob("traces.*.jsonl"))


def trace_files(run_dir: RunDirectory) -> list[Path]:
    """Every file that holds the run's durable traces: traces.jsonl and the parts not collected yet."""
    return [run_dir.traces, *trace_parts(run_dir)]


def done_cells(run_dir: RunDirectory, variant_names: set[str]) -> set[CellKey]:
    """The cells with a durable trace, in traces.jsonl or in a part not collected yet (the resume set)."""
    done: set[CellKey] = set()
    for path in trace_files(run_dir):
        done |= completed_cells(path, variant_names)
    return done


def shard_case_ids(cases_path: Path, shard: Shard) -> set[str]:
    """The ids of the cases ``shard`` holds (by their position in the snapshot)."""
    return {str(CASES.read_fields(raw, "id")[0]) for position, (_, raw) in enumerate(iter_raw_lines(cases_path))
            if shard.holds(position)}


def shard_case_count(cases_path: Path, shard: Shard) -> int:
    """How many cases of the snapshot ``shard`` holds."""
    cases = count_cases(cases_path)
    return cases if shard.whole else len(range(shard.index, cases, shard.count))


def collect_traces(run_dir: RunDirectory) -> str | None:
    """Append the complete lines of every part file to traces.jsonl, each cell once, then
    remove the parts; the digest of traces.jsonl's complete lines (None: there were no parts).

    Safe to repeat after a crash at any point: a cell already in traces.jsonl is not appended
    again, and the parts are removed only once traces.jsonl is fsynced. A part's torn tail
    (a shard killed mid-write) is set aside as ``<part>.torn`` and its cell left to a resume.
    """
    parts = trace_parts(run_dir)
    if not parts:
        return None
    with locked(run_dir.lock), contextlib.ExitStack() as holding:
        for part in parts:  # from reading to removal: a shard still writing one (another run of the partition) first
            holding.enter_context(locked(_part_lock(part)))
        seen = {_cell_key(raw) for _, raw in iter_raw_lines(run_dir.traces)}
        # The lines are already sealed (trace_hash set by the shard): copied as they are.
        with JsonlAppender(run_dir.traces, keep_digest=True) as out:
            for part in parts:
                set_aside_torn_tail(part)
                for _, raw in iter_raw_lines(part):
                    key = _cell_key(raw)
                    if key not in seen:
                        seen.add(key)
                        out.write(raw[:-1])
        digest = out.digest
        for part in parts:
            part.unlink()
        with contextlib.suppress(OSError):  # kept while it holds a torn tail set aside
            parts[0].parent.rmdir()
    return digest


def _cell_key(raw: bytes) -> CellKey:
    case_id, variant, sample = TRACES.read_fields(raw, "case_id", "variant_name", "sample")
    return (case_id, variant, int(sample or 0))


@dataclass(frozen=True)
class Where:
    """Where a trace was made: ``extra.executor`` of every trace (host, process id, shard)."""

    host: str
    pid: int
    shard: str

    @classmethod
    def here(cls, shard: Shard) -> Where:
        return cls(host=socket.gethostname(), pid=os.getpid(), shard=shard.label)

    def as_extra(self) -> dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "shard": self.shard}


def plan_trace_shards(spec: EvalSpec, run_dir: RunDirectory, reuse_from: RunDirectory | None = None) -> list[Shard]:
    """The shards of the run's traces stage (its run.json); with ``reuse_from``, the unchanged
    traces of that run are copied in first, once, before any shard starts (runner/reuse.py)."""
    if reuse_from is not None:
        from evalh_pipeline.runner.reuse import reuse_traces

        with locked(run_dir.lock):
            reuse_traces(spec, run_dir, reuse_from)
    return recorded_shards(run_dir)
