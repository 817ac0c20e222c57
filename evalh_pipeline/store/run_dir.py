"""The run directory: the durable surface of one run (layout in the README).

    runs/<run_id>/
      run.json           what produced the run (eval name, eval.yaml path, created_at, fixtures)
      config.yaml        the expanded config, secrets masked
      config_hash.txt    sha256 of the masked config
      cases.jsonl        the selected cases, as run
      traces.jsonl       one Trace per cell (write-once, appended; each line carries its trace_hash)
      traces.jsonl.torn  torn last lines set aside by the next writer (store/jsonl.py), if any
      results.jsonl      one EvaluationResult per (trace, evaluator): the results store's files
                         one after another, replaced whole (the file users and tools read)
      results/           the results store (store/results_store.py):
        store.json       evaluator -> its file, config hash, and the traces it is current for
        <evaluator>-<digest>.jsonl   one evaluator's results, named by their content hash
      summary.yaml       RunSummary (regenerable)
      report.md          the summary for humans (regenerable)
      drift.yaml         the run against the eval's promoted baseline (regenerable)
      drift.md           the drift report for humans, regressions first (regenerable)
      artifacts/<case>/<variant>/   filesystem artifacts, when the eval has a workspace
      publish.jsonl      output[] entries that failed to take a stage (outputs/journal.py)

    hidden (the engine's bookkeeping; never published, see outputs/publishing.py):
      .lock                       held while results.jsonl is replaced (store/locking.py)
      .publish-state.json         what each output[] mirror last received
      .cells/                     the cell store: Parquet copies of what the queries read of the
                                  traces and results, keyed by content hashes (queries/cell_store.py)
      .stores.lock                held while the run is written to its trace stores
      .stores-state.json          what each SQL trace store last took (outputs/stores/sql.py)
      .otel-<key>.json            which traces an OTLP endpoint already took (outputs/stores/otel.py)
      .<purpose>.<random>.tmp     a file being written, renamed into place when complete

    and beside the runs, in the runs root:
      .staging-<run_id>-<random>/ a run being created, renamed to <run_id>/ when complete
      .cache/                     caches evaluators keep across runs (judge verdicts)
      .workspaces/                the workspaces of running cells

Every path above is named here and nowhere else.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.common.masking import mask_config

if TYPE_CHECKING:
    # Only for annotations: the read-only commands (compare, drift) must not pay for the
    # config loader and pydantic.
    from evalh_pipeline.config.spec import EvalSpec

# Run ids are also Dagster partition keys and folder names: keep them path- and URL-safe.
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def new_run_id(eval_name: str, now: datetime | None = None) -> str:
    """Sortable UTC timestamp (to the microsecond) + eval name; see :func:`create_run_directory`."""
    now = now or datetime.now(timezone.utc)
    return f"{now.strftime('%Y-%m-%dT%H-%M-%S-%f')}_{eval_name}"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def config_hash(masked_config: dict[str, Any]) -> str:
    """sha256 of the masked config in canonical JSON: stable across key order and machines."""
    return hashlib.sha256(canonical_json(masked_config).encode()).hexdigest()


def write_atomic(path: Path, text: str) -> None:
    """Write via a temp file in the same folder and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # Created 0666 less the process umask, like any file the user writes (mkstemp would
    # make it 0600); O_EXCL: a name another writer took is never reused.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class RunDirectory:
    """Paths of one run and the few operations on them."""

    path: Path

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def meta(self) -> Path:
        return self.path / "run.json"

    @property
    def config_yaml(self) -> Path:
        return self.path / "config.yaml"

    @property
    def config_hash_txt(self) -> Path:
        return self.path / "config_hash.txt"

    @property
    def cases(self) -> Path:
        return self.path / "cases.jsonl"

    @property
    def traces(self) -> Path:
        return self.path / "traces.jsonl"

    @property
    def results(self) -> Path:
        return self.path / "results.jsonl"

    @property
    def rate_limits(self) -> Path:
        """One line per rate limit a stage met: its totals and its concurrency over time."""
        return self.path / "rate_limits.jsonl"

    @property
    def judge_consistency(self) -> Path:
        """One line per evaluator: its flip rate over K repeated judgements of each cell
        (``evalh re-evaluate --repeat-judging K``); never part of the results."""
        return self.path / "judge_consistency.jsonl"

    @property
    def summary(self) -> Path:
        return self.path / "summary.yaml"

    @property
    def report(self) -> Path:
        return self.path / "report.md"

    @property
    def drift(self) -> Path:
        return self.path / "drift.yaml"

    @property
    def drift_report(self) -> Path:
        return self.path / "drift.md"

    @property
    def artifacts(self) -> Path:
        return self.path / "artifacts"

    @property
    def publish_log(self) -> Path:
        return self.path / "publish.jsonl"

    @property
    def evaluators_yaml(self) -> Path:
        """The evaluator configuration (masked) that judged the current results, and its hash."""
        return self.path / "evaluators.yaml"

    @property
    def stage_runs(self) -> Path:
        """Which Dagster run last made each stage (store/stage_runs.py): the viewer's links back to Dagster."""
        return self.path / "stage_runs.json"

    @property
    def reuse_record(self) -> Path:
        """Where the run's traces were reused from (``evalh run --reuse``, runner/reuse.py)."""
        return self.path / "reuse.json"

    # Hidden files: the engine's own bookkeeping.

    @property
    def lock(self) -> Path:
        return self.path / ".lock"

    @property
    def results_store(self) -> Path:
        """The results store's folder: one file per evaluator and ``store.json``."""
        return self.path / "results"

    @property
    def results_manifest(self) -> Path:
        return self.results_store / "store.json"

    def evaluator_results(self, evaluator: str, digest: str) -> Path:
        """The results store's file of ``evaluator``'s results whose content hash is ``digest``.

        Named by the evaluator (reduced to characters safe in a file name) and the hash, so
        a file is never rewritten under its name: a new judging makes a new file.
        """
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", evaluator).lstrip(".")[:60] or "evaluator"
        return self.results_store / f"{slug}-{digest.rsplit('-', 1)[-1][:24]}.jsonl"

    @property
    def last_evaluation(self) -> Path:
        """The counts of the run's last evaluation (judged, kept), for `evalh re-evaluate`."""
        return self.path / ".evaluation.json"

    @property
    def publish_state(self) -> Path:
        return self.path / ".publish-state.json"

    @property
    def cells_cache(self) -> Path:
        return self.path / ".cells"

    @property
    def stores_lock(self) -> Path:
        return self.path / ".stores.lock"

    @property
    def stores_state(self) -> Path:
        return self.path / ".stores-state.json"

    def otel_state(self, endpoint: str) -> Path:
        """Which traces the OTLP store at ``endpoint`` has exported (one file per endpoint)."""
        return self.path / f".otel-{hashlib.sha256(endpoint.encode()).hexdigest()[:12]}.json"

    def temp_file(self, purpose: str, folder: Path | None = None) -> Path:
        """A new empty hidden file ``.<purpose>.<random>.tmp`` in the run folder (or in
        ``folder``, one of its own), to be renamed or removed."""
        fd, name = tempfile.mkstemp(dir=folder or self.path, prefix=f".{purpose}.", suffix=".tmp")
        os.close(fd)
        return Path(name)

    def remove_stale_temp_files(self, *purposes: str) -> list[Path]:
        """Remove the temp files (:meth:`temp_file`) of ``purposes`` a killed writer left behind.

        Only for a writer that holds the run's lock: no other writer of those purposes is
        at work then, so every such file is a leftover. Returns what was removed.
        """
        removed = []
        for folder in (self.path, self.results_store):
            for purpose in purposes:
                for stale in folder.glob(f".{glob.escape(purpose)}.*.tmp"):
                    try:
                        stale.unlink()
                        removed.append(stale)
                    except OSError:
                        pass  # not ours to remove after all (permissions): left as it was
        return removed

    def exists(self) -> bool:
        return self.meta.exists() or self.is_eval_harness_run()

    def is_eval_harness_run(self) -> bool:
        """A run folder written by eval-harness: no run.json, but its four files."""
        return not self.meta.exists() and all(
            (self.path / name).is_file() for name in EVAL_HARNESS_RUN_FILES)

    def read_meta(self) -> dict[str, Any]:
        if self.is_eval_harness_run():
            return _eval_harness_meta(self)
        if not self.meta.exists():
            raise FileNotFoundError(f"{self.path} is not a run directory (no run.json, and not an eval-harness "
                                    f"run: those have {', '.join(EVAL_HARNESS_RUN_FILES)})")
        meta: dict[str, Any] = json.loads(self.meta.read_text(encoding="utf-8"))
        return meta

    def read_config_hash(self) -> str:
        return self.config_hash_txt.read_text(encoding="utf-8").strip() if self.config_hash_txt.exists() else ""


def runs_cache_dir(runs_root: str | Path) -> Path:
    """Where evaluators keep caches across the runs of a runs root (judge verdicts)."""
    return Path(runs_root) / ".cache"


def workspaces_dir(runs_root: str | Path) -> Path:
    """Where the workspaces of running cells are made (same file system as the runs)."""
    return Path(runs_root) / ".workspaces"


# eval-harness 2.0.2 writes these four files per run (and no run.json).
EVAL_HARNESS_RUN_FILES = ("config.yaml", "traces.jsonl", "results.jsonl", "summary.yaml")


def _eval_harness_meta(run_dir: RunDirectory) -> dict[str, Any]:
    """run.json's fields for an eval-harness run folder, read from its config.yaml snapshot."""
    import yaml

    from evalh_pipeline.common.yaml_files import load_yaml_text

    try:
        # The shape limits of every YAML the tool reads (a hostile folder is still input).
        config = load_yaml_text(run_dir.config_yaml.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise FileNotFoundError(f"{run_dir.path}: eval-harness run with an unreadable config.yaml: {exc}") from None
    if not isinstance(config, dict):
        config = {}
    found_eval, found_systems = config.get("eval"), config.get("systems")
    eval_info: dict[str, Any] = found_eval if isinstance(found_eval, dict) else {}
    systems: list[Any] = found_systems if isinstance(found_systems, list) else []
    return {
        "eval_name": str(eval_info.get("name") or run_dir.run_id.split("_", 1)[-1]),
        "run_id": run_dir.run_id,
        "config_path": None,
        "variants": [str(s["name"]) for s in systems if isinstance(s, dict) and "name" in s],
        "written_by": "eval-harness",
    }


def run_directory(spec: EvalSpec, run_id: str) -> RunDirectory:
    if not RUN_ID_PATTERN.match(run_id):
        raise ValueError(f"invalid run id {run_id!r}: use letters, digits, '_', '-' and '.' only")
    return RunDirectory(Path(spec.runs_root) / run_id)


@contextmanager
def staged_run_directory(spec: EvalSpec, run_id: str) -> Iterator[RunDirectory]:
    """Build a new run directory in a hidden staging folder; publish it by rename on success.

    If the block raises (a bad dataset row, say), nothing appears under ``runs/``.
    """
    final = run_directory(spec, run_id)
    root = final.path.parent
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{run_id}-", dir=root))
    try:
        yield RunDirectory(staging)
        os.rename(staging, final.path)  # fails if the run id is taken: run ids are never reused
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_run_header(run_dir: RunDirectory, spec: EvalSpec, run_id: str) -> str:
    """Write run.json, config.yaml and config_hash.txt; returns the config hash.

    run.json records the fixture fingerprint (dataset sha256, git commit, workspace tree)
    the run starts from: the lineage every materialization of the run shows.
    """
    from evalh_pipeline.store.fixtures import fixture_fingerprint
    from evalh_pipeline.common.yaml_files import dump_yaml

    masked = mask_config(spec.raw, spec.secret_values)
    digest = config_hash(masked)
    write_atomic(run_dir.config_yaml, dump_yaml(masked))
    write_atomic(run_dir.config_hash_txt, digest + "\n")
    meta = {
        "run_id": run_id,
        "eval_name": spec.name,
        "config_path": str(spec.path),
        "config_hash": digest,
        "created_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
        "variants": spec.variant_names,
        "fixtures": fixture_fingerprint(spec).as_record(),
    }
    write_atomic(run_dir.meta, json.dumps(meta, indent=2) + "\n")
    return digest
