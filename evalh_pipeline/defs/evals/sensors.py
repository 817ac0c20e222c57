"""Sensors of an eval: a new run when its fixtures change, and one run per UTC day.

Both are ``STOPPED`` by default: nothing starts in ``dagster dev`` until a sensor is
turned on in the UI (or ``dagster sensor start``).

- ``<eval>__fixtures_changed`` fingerprints the fixtures: the sha256 of the dataset file
  plus, when the eval folder (or the dataset's folder) is inside a git repository, that
  repository's ``HEAD`` commit. The cursor is the last fingerprint seen. The first
  evaluation (no cursor) only records the fingerprint and requests nothing: turning the
  sensor on is not a fixture change. A later change adds a run partition and requests one
  ``<eval>__cells`` run over every variant of it (run key ``fixtures:<fingerprint>``).
- ``<eval>__daily_drift`` requests one ``<eval>__cells`` run per UTC day (run key
  ``daily:<YYYY-MM-DD>``), including the day it is turned on; the cursor is the last day
  it requested.

A sensor can only start a job; like ``evalh run``, the run covers every variant of the
new run partition through the single-run partition range tags. The run's ``summary`` is
not materialized by these sensors: launch ``<eval>__summarize`` for the run partition
(UI) and gate it with ``evalh drift runs/<run_id>``.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path

from typing import Any

import dagster as dg

from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.defs.evals.partitions import runs_partitions, variant_range_tags
from evalh_pipeline.store.run_dir import new_run_id

GIT_TIMEOUT_SECONDS = 5
DAILY_INTERVAL_SECONDS = 3600
FIXTURE_COMMIT_TAG = "evalh/fixture_commit"
FIXTURE_HASH_TAG = "evalh/fixture_hash"
TRIGGER_TAG = "evalh/trigger"
DAILY_DATE_TAG = "evalh/daily_date"
NO_GIT = "nogit"


@dataclass(frozen=True)
class FixtureFingerprint:
    """What the fixtures of an eval are: the dataset's content hash and the git commit."""

    dataset_hash: str
    commit: str  # "" when the eval is not in a git repository (or git is unavailable)

    @property
    def key(self) -> str:
        """The cursor value and the run key suffix: ``<commit or nogit>:<dataset sha256>``."""
        return f"{self.commit or NO_GIT}:{self.dataset_hash}"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def git_head(folder: Path) -> str:
    """``HEAD`` of the git repository containing ``folder``; "" if none (or no git, or timeout)."""
    if not folder.is_dir():
        return ""
    try:
        proc = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--verify", "-q", "HEAD"],
            capture_output=True, text=True, timeout=GIT_TIMEOUT_SECONDS, check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    head = proc.stdout.strip()
    return head if proc.returncode == 0 and head else ""


def fixture_fingerprint(spec: EvalSpec) -> FixtureFingerprint:
    """Dataset sha256, plus HEAD of the git repo holding the eval folder (else the dataset's folder)."""
    commit = git_head(spec.eval_dir) or git_head(spec.dataset_path.parent)
    return FixtureFingerprint(dataset_hash=file_sha256(spec.dataset_path), commit=commit)


def _cells_job(spec: EvalSpec) -> str:
    return f"{spec.name}__cells"


def _run_key_used(instance: dg.DagsterInstance, job_name: str, run_key: str) -> bool:
    """A run with this run key exists already (Dagster would skip the request)."""
    return instance.get_runs_count(dg.RunsFilter(job_name=job_name, tags={"dagster/run_key": run_key})) > 0


def _new_run(spec: EvalSpec, run_key: str, tags: dict[str, str], now: datetime | None = None) -> dg.SensorResult:
    """Add a run partition and request ``<eval>__cells`` over every variant of it."""
    run_id = new_run_id(spec.name, now)
    return dg.SensorResult(
        dynamic_partitions_requests=[
            dg.AddDynamicPartitionsRequest(partitions_def_name=runs_partitions(spec.name).name, partition_keys=[run_id]),
        ],
        run_requests=[dg.RunRequest(
            job_name=_cells_job(spec),
            run_key=run_key,
            tags={**variant_range_tags(run_id, spec.variant_names), "evalh/run_id": run_id, **tags},
        )],
    )


def build_fixture_sensor(spec: EvalSpec) -> dg.SensorDefinition:
    """``<eval>__fixtures_changed``: a new run when the dataset or the repo's HEAD changes."""

    @dg.sensor(
        name=f"{spec.name}__fixtures_changed",
        job_name=_cells_job(spec),
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=(
            f"Start a new run of `{spec.name}` (every variant) when its fixtures change: the dataset's "
            "sha256 or the git HEAD of the eval's repository. The first tick only records the fingerprint."
        ),
    )
    def fixtures_changed(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        try:
            current = fixture_fingerprint(spec)
        except OSError as exc:
            return dg.SkipReason(f"cannot read the dataset {spec.dataset_path}: {exc}")
        if context.cursor is None:
            context.update_cursor(current.key)
            return dg.SkipReason(f"first evaluation: recorded fixtures {current.key}; no run requested")
        if context.cursor == current.key:
            return dg.SkipReason(f"fixtures unchanged ({current.key})")
        context.update_cursor(current.key)
        run_key = f"fixtures:{current.key}"
        if _run_key_used(context.instance, _cells_job(spec), run_key):
            return dg.SkipReason(f"fixtures {current.key} were already run (run key {run_key})")
        return _new_run(spec, run_key, {
            TRIGGER_TAG: "fixtures",
            FIXTURE_COMMIT_TAG: current.commit or NO_GIT,
            FIXTURE_HASH_TAG: current.dataset_hash,
        })

    return fixtures_changed


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def build_daily_drift_sensor(spec: EvalSpec, clock: Callable[[], datetime] = _utc_now) -> dg.SensorDefinition:
    """``<eval>__daily_drift``: one new run per UTC day (``clock`` is for tests)."""

    @dg.sensor(
        name=f"{spec.name}__daily_drift",
        job_name=_cells_job(spec),
        minimum_interval_seconds=DAILY_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=(
            f"Start one run of `{spec.name}` (every variant) per UTC day, to watch for drift against "
            "the baseline (`evalh drift runs/<run_id>`)."
        ),
    )
    def daily_drift(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        now = clock().astimezone(timezone.utc)
        today = now.date().isoformat()
        if context.cursor is not None and date.fromisoformat(context.cursor).isoformat() >= today:
            return dg.SkipReason(f"already requested the run of {context.cursor} (UTC)")
        run_key = f"daily:{today}"
        context.update_cursor(today)
        if _run_key_used(context.instance, _cells_job(spec), run_key):
            return dg.SkipReason(f"the run of {today} exists already (run key {run_key})")
        return _new_run(spec, run_key, {TRIGGER_TAG: "daily", DAILY_DATE_TAG: today}, now)

    return daily_drift


def build_summary_follow_up(spec: EvalSpec, summarize_job: Any) -> dg.SensorDefinition:
    """After a sensor-started ``<eval>__cells`` run succeeds, summarize that run (and so
    evaluate its gates): CLI runs summarize themselves, sensor runs need this step."""

    @dg.run_status_sensor(
        name=f"{spec.name}__summarize_sensor_runs",
        run_status=dg.DagsterRunStatus.SUCCESS,
        request_job=summarize_job,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=f"Summarize each `{_cells_job(spec)}` run started by the fixture or daily sensor.",
    )
    def summarize_sensor_runs(context: dg.RunStatusSensorContext):
        run = context.dagster_run
        run_id = run.tags.get("evalh/run_id")
        if run.job_name != _cells_job(spec) or TRIGGER_TAG not in run.tags or not run_id:
            return dg.SkipReason("not a sensor-started cells run of this eval")
        return dg.RunRequest(run_key=f"summary:{run_id}", partition_key=run_id)

    return summarize_sensor_runs


def build_eval_sensors(spec: EvalSpec, summarize_job: Any) -> list[dg.SensorDefinition]:
    """The eval's automation: fixture and daily runs, and the summary that follows them."""
    return [build_fixture_sensor(spec), build_daily_drift_sensor(spec), build_summary_follow_up(spec, summarize_job)]
