"""Execute an eval's jobs for one partition (eval run) in this process: what the CLI does.

Every CLI route is one Dagster run of one of the eval's jobs on the partition of its eval
run (key = run id), executed here against the instance the UI reads: ``evalh run`` and
``--resume``/``retry-failed`` run ``<eval>__run``, ``re-evaluate`` runs ``<eval>__judge``,
``promote`` runs ``<eval>__promote``. Each first adds the partition, so the run is in the
UI's partition list from its first step. The steps compute every stage; nothing is done
outside them and reported afterwards. Each run names the code location the UI serves as its
origin, so Dagster's own "Re-execute" buttons work on it (:func:`execute_as_code_location_run`),
and the eval file and run folder it works on (tags), so a re-execution by a code location
that serves another eval of that name refuses (:func:`code_location_origin`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import shutil
import signal
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableJob  # a job each step's process rebuilds
from dagster._core.definitions.repository_definition.valid_definitions import SINGLETON_REPOSITORY_NAME
from dagster._core.errors import DagsterAssetCheckFailedError  # not exported at the top level
from dagster._core.remote_origin import (  # the origin a run names; not exported at the top level
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from filelock import FileLock

from evalh_pipeline.config import ConfigError, EvalSpec
from evalh_pipeline.defs import cli_runs
from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.evals.executors import runs_in_process
from evalh_pipeline.defs.evals.names import (
    EVAL_FILE_TAG,
    EVAL_TAG,
    PARTITION_TAG,
    REJUDGE_TAG,
    REPEATS_TAG,
    REUSE_FROM_TAG,
    RUN_DIR_TAG,
    TRIGGER_TAG,
    judge_job,
    judge_consistency_job,
    promote_job,
    run_id_problem,
    run_job,
    runs_partitions,
)
from evalh_pipeline.defs.instance_config import INSTANCE_YAML, instance_home
from evalh_pipeline.defs.resources import EvalhRuntime
from evalh_pipeline.defs.run_options import NO_ANSWER_KEY, NoSystemAnswered, RunOptions, RunOutcome
from evalh_pipeline.errors import InfrastructureError
from evalh_pipeline.models.versioning import SchemaVersionError
from evalh_pipeline.runner.stages import load_summary
from evalh_pipeline.outputs.publishing import pull_run, record_files, run_location
from evalh_pipeline.store.run_dir import run_directory, write_atomic

# The code location the UI serves (workspace.yaml's `location_name`, pyproject's
# `[tool.dagster] code_location_name`; tests/defs/test_dagster_buttons.py checks they agree).
# The CLI's runs name it as their origin, so Dagster's "Re-execute" buttons find their job.
CODE_LOCATION = "evalh_pipeline"
# run.executor types whose steps all run in the launching process (the CLI's own objects).
# Below this much free space the instance's SQLite storage fails mid-run ("disk I/O error").
MIN_FREE_BYTES = 64 << 20


def local_instance() -> dg.DagsterInstance:
    """The instance at :func:`instance_home` (``./.dagster_home`` is created on first use,
    with evalh's dagster.yaml), checked to be usable before any work (:func:`check_instance`).

    A ``$DAGSTER_HOME`` folder that is still empty gets evalh's dagster.yaml too (a new
    instance: without it Dagster prints its telemetry banner into the command's output and
    launches UI runs without a queue); one already in use is left as its owner set it up.
    The environment is only read: the instance is opened from its folder, so nothing
    else in the process sees a DAGSTER_HOME it did not set.
    """
    home = instance_home()
    chosen = bool(os.environ.get("DAGSTER_HOME"))
    if chosen:
        _check_folder(home)  # a missing or read-only folder is said as such, before any write
    try:
        if not chosen:
            home.mkdir(parents=True, exist_ok=True)
        if not (home / "dagster.yaml").exists() and (not chosen or not any(home.iterdir())):
            write_atomic(home / "dagster.yaml", INSTANCE_YAML)
    except OSError as exc:
        raise InfrastructureError(_instance_problem(home, exc)) from None
    if not chosen:
        _check_folder(home)
    try:
        with _opening(home):
            return dg.DagsterInstance.from_config(str(home))
    except Exception as exc:  # noqa: BLE001 - a storage that cannot be opened, said in one line
        raise InfrastructureError(_instance_problem(home, exc)) from None


def _check_folder(home: Path) -> None:
    """A missing, read-only or full instance folder, said in one line before the first cell."""
    problem = _folder_problem(home)
    if problem:
        raise InfrastructureError(problem)


def _folder_problem(home: Path) -> str:
    """What is wrong with the instance folder (not a folder, not writable, too little space); "" if nothing."""
    if not home.is_dir():
        return (f"Dagster instance folder {home} ($DAGSTER_HOME) is not a directory: create it, "
                "or unset DAGSTER_HOME to use ./.dagster_home")
    probe = home / f".evalh-write-check-{uuid.uuid4().hex}"
    try:
        probe.write_bytes(b"")
    except OSError as exc:
        if exc.errno != errno.ENOSPC:  # a full file system is said below, with its free space
            return (f"Dagster instance folder {home} is not writable ({exc.strerror or exc}): "
                    "make it writable, or point DAGSTER_HOME at a writable folder")
    finally:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
    free = shutil.disk_usage(home).free
    if free < MIN_FREE_BYTES:
        return (f"Dagster instance folder {home} has {free >> 20} MB free (evalh needs "
                f"{MIN_FREE_BYTES >> 20} MB): free some space, or point DAGSTER_HOME elsewhere")
    return ""


def _instance_problem(home: Path, exc: BaseException) -> str:
    """One line for an instance that cannot be opened or written: what, and where.

    The folder is looked at first: SQLite says "disk I/O error" or "unable to open database
    file" for a full or read-only file system, which names neither the cause nor the place."""
    folder = _folder_problem(home)
    if folder:
        return folder
    cause = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps the driver's error
    text = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
    if "locked" in text:
        return (f"Dagster instance {home} is locked by another process (its SQLite database: {text}); "
                "wait for it, or stop it (`dagster dev`, another evalh), then try again")
    return f"Dagster instance {home} cannot be used: {type(cause).__name__}: {text}"


@contextmanager
def _opening(home: Path) -> Iterator[None]:
    """One process at a time opens the instance: two `evalh` commands opening a new one at
    once would both create its SQLite tables, and one would fail ("table runs already
    exists")."""
    lock = FileLock(str(home / ".evalh-instance.lock"))
    lock.acquire(timeout=120)
    try:
        yield
    finally:
        lock.release()


def add_run_partition(instance: dg.DagsterInstance, eval_name: str, run_id: str) -> None:
    """Add ``run_id`` to the eval's partitions (once): the first write of every route, so an
    instance that cannot be written is found before any cell runs."""
    problem = run_id_problem(run_id)
    if problem:
        raise ConfigError.single("run id", None, "", problem)
    name = runs_partitions(eval_name)
    try:
        if not instance.has_dynamic_partition(name, run_id):
            instance.add_dynamic_partitions(name, [run_id])
    except Exception as exc:  # noqa: BLE001 - the storage refusing a write, said in one line
        raise InfrastructureError(_instance_problem(instance_home(), exc)) from None


def delete_run_partition(instance: dg.DagsterInstance, eval_name: str, run_id: str) -> bool:
    """Remove ``run_id`` from the eval's partitions (``evalh delete-run``); False if it was not one."""
    name = runs_partitions(eval_name)
    try:
        if not instance.has_dynamic_partition(name, run_id):
            return False
        instance.delete_dynamic_partition(name, run_id)
    except Exception as exc:  # noqa: BLE001 - the storage refusing a write, said in one line
        raise InfrastructureError(_instance_problem(instance_home(), exc)) from None
    return True


def end_abandoned_runs(instance: dg.DagsterInstance, eval_name: str, run_id: str, reason: str) -> list[str]:
    """Mark failed the CLI's Dagster runs of partition ``run_id`` still recorded as in progress
    whose evalh died (defs/cli_runs.py: no process holds their lease), with ``reason``.

    Call only while holding the run directory's lock: a run whose lease is not in this
    instance folder (an evalh from before leases) is then taken for abandoned too, as the
    lock says no other command works on the run. A command that resumes or re-judges a run
    calls it first; the code location's sensor does the same for every eval while the
    daemon runs."""
    return cli_runs.end_abandoned_runs(instance, {PARTITION_TAG: run_id, EVAL_TAG: eval_name}, lambda _run: reason,
                                       missing_lease_is_free=True)


def materialize_run(spec: EvalSpec, run_id: str, *, instance: dg.DagsterInstance,
                    runtime: RunOptions | None = None) -> RunOutcome:
    """Materialize cases, traces, results, summary and drift of ``run_id``: one Dagster run.

    For an existing run this resumes it: only cells without a trace are run."""
    return _materialize(spec, run_id, instance, runtime, run_job(spec.name))


def materialize_reevaluation(spec: EvalSpec, run_id: str, *, instance: dg.DagsterInstance,
                             runtime: RunOptions | None = None) -> RunOutcome:
    """Rematerialize results (every variant), summary and drift of a run from its persisted traces."""
    return _materialize(spec, run_id, instance, runtime, judge_job(spec.name))


@dataclass
class Promotion:
    run_id: str
    previous_run_id: str
    dagster_run_id: str


def materialize_promotion(spec: EvalSpec, run_id: str, *, instance: dg.DagsterInstance,
                          runtime: RunOptions | None = None) -> Promotion:
    """Materialize the eval's ``baseline`` asset for the partition ``run_id`` (the atomic pointer + history)."""
    add_run_partition(instance, spec.name, run_id)
    dagster_run_id, _ = _execute(promote_job(spec.name), instance, spec, run_id, runtime, tags={TRIGGER_TAG: "cli"})
    event = instance.get_latest_materialization_event(dg.AssetKey([spec.name, "baseline"]))
    materialization = event.asset_materialization if event else None
    previous = materialization.metadata["previous_run_id"].value if materialization else ""
    return Promotion(run_id=run_id, previous_run_id=str(previous), dagster_run_id=dagster_run_id)


@dataclass
class JudgeMeasurement:
    run_dir: Path  # its judge_consistency.jsonl holds the flip rates
    dagster_run_id: str


def materialize_judge_consistency(spec: EvalSpec, run_id: str, repeats: int, *, instance: dg.DagsterInstance,
                                  runtime: RunOptions | None = None) -> JudgeMeasurement:
    """Run the eval's judge-consistency job on the partition ``run_id``: every trace judged
    ``repeats`` times by each judge, the flip rates written to the run's judge_consistency.jsonl."""
    add_run_partition(instance, spec.name, run_id)
    dagster_run_id, _ = _execute(judge_consistency_job(spec.name), instance, spec, run_id, runtime,
                                 tags={TRIGGER_TAG: "cli", REPEATS_TAG: str(repeats)})
    run_dir = run_directory(spec, run_id)
    pull_run(spec, run_dir)  # written where the step ran: read here
    return JudgeMeasurement(run_dir=run_dir.path, dagster_run_id=dagster_run_id)


def _materialize(spec: EvalSpec, run_id: str, instance: dg.DagsterInstance, runtime: RunOptions | None,
                 job_name: str) -> RunOutcome:
    tags = {TRIGGER_TAG: "cli"}
    if runtime is not None and runtime.reuse_from:
        tags[REUSE_FROM_TAG] = runtime.reuse_from
    if runtime is not None and runtime.rejudge_all:
        tags[REJUDGE_TAG] = "all"
    add_run_partition(instance, spec.name, run_id)
    dagster_run_id, failed = _execute(job_name, instance, spec, run_id, runtime, tags=tags)
    run_dir = run_directory(spec, run_id)
    # Steps that ran on other machines published the run to its URL: what is printed is read
    # here. The run's records (cases, traces, results: hundreds of MB in a large run) stay
    # there: every command that reads or writes the run brings its copy up to date first.
    pull_run(spec, run_dir, skip=record_files(run_dir))
    summary = load_summary(run_dir)
    if any(variant.cases_errored for variant in summary.variants):
        pull_run(spec, run_dir)  # the CLI says why a system could not start, from its traces
    return RunOutcome(run_dir=run_dir, summary=summary, dagster_run_ids=[dagster_run_id], failed_checks=failed)


def _execute(job_name: str, instance: dg.DagsterInstance, spec: EvalSpec, partition: str, options: RunOptions | None,
             *, tags: dict[str, str]) -> tuple[str, list[str]]:
    """Run one job for ``partition`` in this process; returns its Dagster run id and the
    asset checks that failed.

    A failed check is a verdict reported to the caller, not an infrastructure failure, even
    when it is blocking (the run's data is complete as far as it got). The process holds the
    run's lease while it executes it (defs/cli_runs.py), and the run's tags name the eval
    file and the run directory: if the process dies, the run is marked failed with the
    command that finishes it.
    """
    options = options or RunOptions()
    runtime = EvalhRuntime(max_concurrency=options.max_concurrency, progress=options.progress, spec=spec)
    run_id = str(uuid.uuid4())
    tags = {**tags, EVAL_FILE_TAG: str(Path(spec.path).resolve()), RUN_DIR_TAG: run_location(spec, partition)}
    try:
        # The event log keeps every event for the UI; evalh reports failures itself
        # (EVALH_LOG_LEVEL=DEBUG shows Dagster's own log).
        run_config: dict[str, object] = {"loggers": {"console": {"config": {
            "log_level": os.environ.get("EVALH_LOG_LEVEL", "CRITICAL")}}}}
        # One path for every executor that runs steps elsewhere (multiprocess, celery, k8s,
        # docker): each step's process rebuilds the job from the eval file and the command's
        # narrowing (:func:`reconstructable_eval_job`). The promote job has no step to spread.
        in_process = job_name in (promote_job(spec.name), judge_consistency_job(spec.name)) or runs_in_process(spec)
        recon = None if in_process else reconstructable_eval_job(spec, job_name, options.max_concurrency)
        defs = build_definitions([spec], runtime)[0] if recon is None else None
        with (cli_runs.executing(instance, run_id), _sigterm_kept(),
              contextlib.redirect_stderr(_StoreFailureLines(sys.stderr))):
            execute_as_code_location_run(defs, job_name, instance=instance, partition_key=partition, tags=tags,
                                         run_id=run_id, run_config=run_config, recon=recon)
    except (ConfigError, InfrastructureError):
        raise
    except dg.DagsterExecutionInterruptedError:
        raise KeyboardInterrupt from None
    except DagsterAssetCheckFailedError:
        pass  # a blocking gate failed: reported below with the other failed checks
    except dg.Failure as exc:  # a step's own failure, raised as it is (the traces step when no system answered)
        if NO_ANSWER_KEY in exc.metadata:
            raise NoSystemAnswered(str(exc.description), str(exc.metadata[NO_ANSWER_KEY].value)) from None
        raise InfrastructureError(f"{job_name} failed: {exc.description}") from None
    except dg.DagsterUserCodeExecutionError as exc:
        cause = exc.user_exception
        if isinstance(cause, ConfigError):
            raise cause from None
        if isinstance(cause, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        if isinstance(cause, dg.Failure):
            raise InfrastructureError(f"{job_name} failed: {cause.description}") from None
        raise InfrastructureError(f"{job_name} failed: {type(cause).__name__}: {cause}") from exc
    except SchemaVersionError as exc:  # a record this release cannot read: the record, not the instance
        raise InfrastructureError(f"{job_name} failed: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - anything else is the orchestration failing
        raise InfrastructureError(f"{job_name} failed: {_instance_problem(instance_home(), exc)}") from exc
    failed_step = _failed_step(instance, run_id)
    if failed_step:
        raise InfrastructureError(f"{job_name} failed: {failed_step}")
    return run_id, _failed_checks(instance, run_id)


def _failed_step(instance: dg.DagsterInstance, run_id: str) -> str:
    """The first step failure of a run whose steps ran in other processes (those raise nothing
    here: the run just ends failed), a blocking gate's aside; "" if none."""
    run = instance.get_run_by_id(run_id)
    if run is None or run.status != dg.DagsterRunStatus.FAILURE:
        return ""
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        error = record.dagster_event.step_failure_data.error if record.dagster_event else None
        if error is not None and error.cls_name == DagsterAssetCheckFailedError.__name__:
            continue  # a gate: reported with the other failed checks
        cause = error.cause if error is not None and error.cause is not None else error
        text = (cause.message.strip().splitlines() or [""])[-1] if cause is not None else "no error recorded"
        return f"step {record.step_key}: {text}"
    return ""


def code_location_origin(repository_name: str, job_name: str) -> RemoteJobOrigin:
    """Where the UI finds ``job_name``: the job of that name in the repository of ``defs``, in
    the code location named :data:`CODE_LOCATION` (however the workspace loads it).

    Every CLI run names it, also that of an eval the code location does not serve, or serves
    from another file of the same name. Which eval a run belongs to is its file and run folder
    (its tags), and the steps of a re-execution refuse, in one line, to work on a run of
    another file or run folder (defs/evals/runs.py ``other_eval_problem``): that is where
    the work happens, whatever the UI offers. Leaving the origin out would not disable the
    buttons: Dagster's UI enables "Re-execute" on a run without an origin when a loaded job
    has its name, and the click then fails inside Dagster ("Expected non-None value"). An
    eval outside the served folders with a name of its own has no such job: the buttons are
    disabled, saying which code location to load, and work once its folder is served.
    """
    repository = RemoteRepositoryOrigin(code_location_origin=RegisteredCodeLocationOrigin(CODE_LOCATION),
                                        repository_name=repository_name)
    return RemoteJobOrigin(repository_origin=repository, job_name=job_name)


def execute_as_code_location_run(defs: dg.Definitions | None, job_name: str, *, instance: dg.DagsterInstance,
                                 partition_key: str, tags: dict[str, str], run_id: str,
                                 run_config: dict[str, object], recon: ReconstructableJob | None = None) -> None:
    """``job.execute_in_process(...)`` of ``defs``' job, whose Dagster run names the code location
    the UI serves (:func:`code_location_origin`); raises what ``execute_in_process`` raises.

    Why Dagster internals: ``execute_in_process`` records its run without a code location
    origin, and the UI's "Re-execute all" / "From failure" need one to find the job
    ("Expected non-None value", dagster-io/dagster#19458, closed without a public API). This
    is ``JobDefinition.execute_in_process`` (the same ephemeral job: in-process executor,
    in-memory default I/O manager, the graph's step values in the run's folder,
    defs/evals/step_values.py; the same tags, partition check and run config) with the run
    created by ``create_run_for_job(..., remote_job_origin=...)`` and executed by
    ``execute_run``. Checked against Dagster 1.13.27; tests/defs/test_dagster_buttons.py
    fails if a later Dagster changes any of it.

    ``recon``: the job rebuilt from its eval in every process of the run
    (:func:`reconstructable_eval_job`), for an executor that runs steps in other processes;
    its graph's step values go to the run's folder (defs/evals/step_values.py), where every
    machine of the run reads them.
    """
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.execution.api import create_execution_plan, execute_run
    from dagster._core.execution.execute_in_process import merge_run_tags

    if recon is not None:
        job = ephemeral = recon.get_definition()
        executable: InMemoryJob | ReconstructableJob = recon
        origin_defs_name = SINGLETON_REPOSITORY_NAME  # build_definitions' Definitions, as in the code location
    else:
        assert defs is not None
        job = defs.resolve_job_def(job_name)
        # The graph's step values go to the run's folder even in one process: the UI's "Re-execute
        # from failure" of a CLI run (the code location's job, in another process) loads the
        # values of the steps it skips from there (tests/e2e/test_ui_reexecute_cli_runs.py).
        ephemeral = job.as_ephemeral_job(resource_defs={}, input_values={})
        executable = InMemoryJob(job_def=ephemeral)
        origin_defs_name = defs.get_repository_def().name
    plan = create_execution_plan(executable, run_config=run_config,
                                 instance_ref=instance.get_ref() if instance.is_persistent else None)
    run = instance.create_run_for_job(
        job_def=ephemeral, execution_plan=plan, run_id=run_id, run_config=run_config,
        tags={**ephemeral.run_tags, **merge_run_tags(job_def=job, partition_key=partition_key, tags=tags,
                                                    asset_selection=None, instance=instance,
                                                    run_config=run_config)},
        remote_job_origin=code_location_origin(origin_defs_name, job_name),
        # Where each step's process loads the job from (Dagster's execute_job records it too):
        # dagster-docker's step containers run its interpreter on its code pointer.
        job_code_origin=recon.get_python_origin() if recon is not None else None,
    )
    execute_run(executable, run, instance, raise_on_error=True)


def reconstructable_eval_job(spec: EvalSpec, job_name: str, max_concurrency: int | None) -> ReconstructableJob:
    """``job_name`` of ``spec`` as each process of a run rebuilds it (:func:`eval_job`): from the
    eval file, its run folder, the command line's case selection and shard count; no secret
    (the arguments are recorded with the run)."""
    from dagster._core.definitions.reconstruct import build_reconstructable_job

    run = spec.config.run
    selection = json.dumps(spec.config.dataset.filter, sort_keys=True, default=str)
    if any(secret in selection for secret in spec.secret_values):
        raise ConfigError.single(str(spec.path), None, "dataset.filter", (
            f"holds a secret value; with run.executor {run.executor.type} the case selection is recorded "
            "with the Dagster run: filter on a value that is not a secret"))
    return build_reconstructable_job(
        __name__, eval_job.__name__,
        # A URL output's working copy is each machine's own (outputs/publishing.py): "" lets it choose.
        # Dagster annotates the positional arguments as a one-element tuple (tuple[object]).
        reconstructable_args=(str(spec.path), "" if _url_output(spec) else str(spec.runs_root), job_name),  # type: ignore[arg-type]
        reconstructable_kwargs={"dataset_filter": selection, "case_limit": spec.case_limit, "shards": run.shards,
                                "executor": run.executor.type, "max_concurrency": max_concurrency},
    )


def _url_output(spec: EvalSpec) -> bool:
    return bool(spec.outputs) and "://" in spec.outputs[0]


def eval_job(eval_path: str, runs_root: str, job_name: str, *, dataset_filter: str = "{}",
             case_limit: int | None = None, shards: int | str = 1, executor: str | None = None,
             max_concurrency: int | None = None) -> dg.JobDefinition:
    """The job a process of a run executes (:func:`reconstructable_eval_job`): the eval loaded
    from its file with this process's environment, as the launching command had narrowed it
    (its cases, and the shard count and executor it chose for the run)."""
    from dataclasses import replace

    from evalh_pipeline.config.dataset import with_selection
    from evalh_pipeline.runner.loading import load_eval

    spec = load_eval(eval_path)
    selection = {key: value if isinstance(value, list) else [value]
                 for key, value in json.loads(dataset_filter).items()}
    spec = with_selection(spec, selection or None, case_limit)
    run = spec.config.run
    run = run.model_copy(update={"shards": shards,
                                 "executor": run.executor.model_copy(update={"type": executor or run.executor.type})})
    spec = replace(spec, runs_root=runs_root or spec.runs_root, config=spec.config.model_copy(update={"run": run}))
    runtime = EvalhRuntime(max_concurrency=max_concurrency, spec=spec)
    return build_definitions([spec], runtime)[0].resolve_job_def(job_name)


class _StoreFailureLines(io.TextIOBase):
    """stderr while a job runs, without the lines Dagster writes for each event it could not
    store (``Exception while writing logger call to event log: …`` with the SQL and its
    parameters). The run then fails, and evalh says in one line what is wrong with the
    instance and where (:func:`_instance_problem`)."""

    PREFIX = "Exception while writing logger call to event log"

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        if not text.startswith(self.PREFIX):
            self.stream.write(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    # The rest is the real stream's: Dagster's compute-log capture and rich ask for them.
    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"


@contextmanager
def _sigterm_kept() -> Iterator[None]:
    """Give SIGTERM back the action it had before the run.

    Dagster's in-process execution points SIGTERM at SIGINT's handler when it restores its
    interrupt handlers; where SIGINT is ignored (a command started in the background of a
    script), SIGTERM is then ignored too, by this process and every process it starts
    after (they inherit it): nothing could stop them with a plain kill."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _failed_checks(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """``asset: check`` names of the checks that failed in a Dagster run."""
    failed = []
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = record.dagster_event.event_specific_data if record.dagster_event else None
        if isinstance(evaluation, dg.AssetCheckEvaluation) and not evaluation.passed:
            failed.append(f"{evaluation.asset_key.to_user_string()}: {evaluation.check_name}")
    return failed


__all__ = ["InfrastructureError", "Promotion", "RunOptions", "RunOutcome", "add_run_partition", "delete_run_partition",
           "end_abandoned_runs",
           "local_instance", "materialize_promotion", "materialize_reevaluation", "materialize_run"]
