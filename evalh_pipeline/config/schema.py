"""The eval.yaml schema (eval-harness 1.0 format) as pydantic models.

Sections that eval-harness validates strictly are strict here too, so a typo is an error
rather than a silently ignored key. Adapter-specific keys of ``systems[]`` and
``dataset`` are kept as extras and validated by the adapter's own config model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalh_pipeline.common.ratelimits.settings import PoolLimits, RateLimitSettings
from evalh_pipeline.config.cron import parse_cron
from evalh_pipeline.common.fields import check_field_path

RetryOn = Literal["timeout", "http_5xx", "adapter_error", "exception", "rate_limited"]
# eval-harness allows any name (spaces too); Dagster partition keys and the run directory's
# file names forbid | , [ ] / \ and control characters, and a name must not start or end blank.
NAME_PATTERN = r"^[^\s|,\[\]/\\\x00-\x1f](?:[^|,\[\]/\\\x00-\x1f]*[^\s|,\[\]/\\\x00-\x1f])?$"


class _Strict(BaseModel):
    # Attribute docstrings are the keys' descriptions in the JSON Schema and the reference.
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


# An eval's name is part of every run id and run folder (`<timestamp>_<name>`, staged as
# `.staging-<run id>-<random>`): short enough that those fit a 255-byte file name.
MAX_EVAL_NAME = 128


# What an eval's key (run ids, run folders, Dagster asset keys, groups, jobs and partitions) may
# hold: Dagster's names allow letters, digits and `_` only. A name eval-harness allows outside
# it (`agent main`, `born-first`) is kept for display and keyed by `eval_key`.
EVAL_KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_]*$"


def eval_key(name: str) -> str:
    """The key of an eval named ``name``: the name itself when it is one, else every run of other
    characters as ``_`` (`agent main` -> `agent_main`, `born-first` -> `born_first`), starting
    with a letter or digit."""
    if re.fullmatch(EVAL_KEY_PATTERN, name):
        return name
    key = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")
    return key if key and key[0].isalnum() else f"eval_{key}".rstrip("_")


class EvalInfo(_Strict):
    name: str = Field(pattern=NAME_PATTERN)
    """The eval's name: it names run folders, run ids and (as its key, other characters as `_`)
    Dagster's assets, jobs and partitions. Spaces allowed; not `| , [ ] / \\` or control characters;
    at most 128 characters.
    """
    description: str | None = None
    """Free text, shown in the Dagster UI and the viewer."""
    owner: str | None = None
    """Who owns the eval (a person or team), shown beside it."""
    tags: list[str] = Field(default_factory=list)
    """Labels for the eval, copied into its Dagster assets' tags."""

    @field_validator("name")
    @classmethod
    def _fits_a_file_name(cls, value: str) -> str:
        if len(value) > MAX_EVAL_NAME:
            raise ValueError(f"eval name is {len(value)} characters; at most {MAX_EVAL_NAME} "
                             "(it names the run folders)")
        return value


class DatasetConfig(BaseModel):
    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    type: str
    """How the cases are read: `yaml`, `jsonl`, or `fixture` (cases with the trace they recorded).
    """
    path: str | None = None
    """The cases file, relative to eval.yaml (then to the working directory)."""
    filter: dict[str, Any] = Field(default_factory=dict)
    """Keep only cases whose `metadata.<key>` (or a dotted path into the case) equals the value or one
    of a list of values.
    """
    sample: int | None = Field(default=None, ge=1)
    """Run N cases drawn as eval-harness draws them (`Random(seed).sample`); `seed` (default: the run
    id) makes the draw repeatable.
    """


class SystemConfig(BaseModel):
    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    name: str = Field(pattern=NAME_PATTERN)
    """The variant's name: one column of every comparison. Spaces allowed; not `| , [ ] / \\` or control
    characters.
    """
    adapter: str
    """How the system is called: `python_function`, `http`, `cli`, `docker`, `git_branch`, `replay`,
    `user_simulator`, or a plugin's adapter. Its other keys are that adapter's settings.
    """
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free data about the variant (model, prompt version), copied into its traces and the summary.
    """
    timeout_seconds: float = Field(default=120, gt=0)
    """A cell that runs longer is stopped and ends `timeout` (retried if `run.retry.on` names it).
    """
    enrich_trace_from: list[dict[str, Any]] = Field(default_factory=list)
    """Trace enrichers run on each trace of this system before it is written (an `http` enricher reads
    spans from your tracing platform).
    """


class WorkspaceConfig(BaseModel):
    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    type: str = "tempdir_snapshot"
    """The workspace each cell runs in (coding agents): `tempdir_snapshot` (a copy of the fixture
    folder per cell), `docker_volume` (a sandbox container), or a plugin's type.
    """


CaptureItem = Literal["final_answer", "thinking", "structured", "messages", "tool_calls", "tool_results",
                      "latency", "tokens", "cost", "streaming"]


# capture item -> the trace fields (dotted, list indexes left out) it keeps: a field of an
# item left out of a non-empty `trace.capture` is dropped (runner/capture.py applies this).
CAPTURED_FIELDS: dict[str, tuple[str, ...]] = {
    "final_answer": ("output.final_answer",),
    "thinking": ("output.thinking", "messages.thinking"),
    "structured": ("output.structured",),
    "messages": ("messages",),
    "tool_calls": ("tool_calls",),
    "tool_results": ("tool_results",),
    "latency": (),  # latency_ms is always kept
    "tokens": ("metrics.token_input", "metrics.token_output", "metrics.token_thinking"),
    "cost": ("metrics.cost_usd", "metrics.cost_thinking_usd"),
    "streaming": ("metrics.latency_first_token_ms", "metrics.latency_last_token_ms", "metrics.tokens_per_second",
                  "metrics.stream_chunks", "metrics.stream_completed"),
}


def capture_items_dropping(field: str, capture: Sequence[str]) -> list[str]:
    """The capture items missing from ``capture`` whose fields ``field`` reads (at or under one).

    ``field`` is a trace field path (``output.thinking``, ``messages[0].thinking``); an empty
    ``capture`` keeps everything. A JSONPath with filters or wildcards is read by its leading
    plain steps only.
    """
    if not capture:
        return []
    steps = re.match(r"\$?\.?([\w-]+(?:\.[\w-]+|\[-?\d+\])*)", field.strip())
    if steps is None:
        return []
    plain = re.sub(r"\[-?\d+\]", "", steps.group(1))
    return [item for item, fields in CAPTURED_FIELDS.items() if item not in capture
            and any(plain == f or plain.startswith(f + ".") for f in fields)]


class TraceCaptureConfig(_Strict):
    """Which parts of each trace are kept (runner/capture.py); empty: all of them."""

    capture: list[CaptureItem] = Field(default_factory=list)
    """The parts of each trace to keep: `final_answer`, `thinking`, `structured`, `messages`,
    `tool_calls`, `tool_results`, `latency`, `tokens`, `cost`, `streaming`. Empty: all of them.
    """


class EvaluatorConfig(_Strict):
    name: str = Field(pattern=NAME_PATTERN)
    """The evaluator's name: one column of results and of `pass_criteria`."""
    type: str
    """The evaluator type (`contains_text`, `exact_match`, `llm_judge`, ... or a plugin's)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """That type's settings, checked by its own config model when the eval loads."""


class PassCriteria(_Strict):
    all_required: list[str] = Field(default_factory=list)
    """Evaluators that must all pass for a case to pass. Both lists empty: every evaluator must pass.
    """
    any_required: list[str] = Field(default_factory=list)
    """Of these evaluators at least one must pass (besides `all_required`)."""


RETRY_ON = ("timeout", "http_5xx", "adapter_error", "exception", "rate_limited")


class RetryConfig(_Strict):
    max_attempts: int = Field(default=1, ge=1)
    """Attempts per cell, the first included (1: no retry)."""
    # Any text, as in eval-harness; a value that names no error type never matches (warned at load).
    on: list[str] = Field(default_factory=list)
    """The error types retried: `timeout`, `http_5xx`, `adapter_error`, `exception`, `rate_limited`.
    """
    backoff_seconds: float = Field(default=0.0, ge=0)
    """The wait before a retry, doubled for each further attempt."""


# run.executor.type -> the Dagster executor of the eval's jobs (defs/evals/executors.py).
# eval-harness's `local` is the in-process executor; its `k8s` and `celery` are Dagster's.
# `auto` (the default): `evalh run` chooses in process or multiprocess for each run from its
# cells, its systems and the machine's cores (runner/shards.py ``choose_layout``); a job
# launched otherwise (the Dagster UI) runs it in process.
AUTO_EXECUTOR = "auto"
EXECUTOR_TYPES = (AUTO_EXECUTOR, "in_process", "local", "multiprocess", "celery", "k8s", "docker")
# eval-harness types with no Dagster executor that can run a run's steps: dagster-dask cannot
# run DynamicOut (dagster-io/dagster#9785), and there is no Ray or Modal executor for Dagster.
UNSUPPORTED_EXECUTORS = {"ray": "Ray", "modal": "Modal"}
# The types whose steps run in the launching process; every other but `auto` (one of the two
# once chosen) runs steps in processes of their own (runner/shards.py: `auto` shards only for those).
IN_PROCESS_EXECUTORS = frozenset({"local", "in_process"})
OUT_OF_PROCESS_EXECUTORS = frozenset(EXECUTOR_TYPES) - IN_PROCESS_EXECUTORS - {AUTO_EXECUTOR}
# run.cells_per_shard's default: `shards: auto` gives a shard at least this many cells. Measured
# (benchmarks/README.md, "Shards: auto"): the multiprocess executor starts a process per step,
# about 19 CPU seconds a run, and a second shard saves half of the traces and results stages,
# about 0.05 ms a trivial cell: no run of up to 200,000 cells paid; the break-even is near
# 400,000 cells on a quiet 2-core machine, so a run spreads from 500,000 cells.
CELLS_PER_SHARD = 250_000


class ExecutorConfig(BaseModel):
    """``run.executor``: which Dagster executor runs the eval's steps (``type``), its settings,
    and ``pools``: named limits (a capacity, or max_concurrency, requests_per_second and/or
    tokens_per_minute). Other keys (eval-harness's own) are accepted and unused."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    type: str = AUTO_EXECUTOR
    """The Dagster executor of the eval's steps: `auto` (in process, or multiprocess shards for a large
    CPU-bound run), `in_process` / `local`, `multiprocess`, `celery`, `k8s`, `docker`.
    """
    pools: dict[str, PoolLimits] = Field(default_factory=dict)
    """Named limits shared by every system and judge that names them with `pool:`, across shards and
    machines: a capacity (`gpu: 2`) or `max_concurrency`, `requests_per_second`,
    `tokens_per_minute`.
    """
    broker: str | None = None
    """celery: the Redis broker URL. Unset: `$EVALH_CELERY_BROKER`, read by each process when the run
    starts, so the URL (and its password) stays out of eval.yaml.
    """
    backend: str | None = None
    """celery: the result backend URL (default: the broker)."""
    max_concurrent: int | None = Field(default=None, ge=1)
    """multiprocess: at most this many step processes at once (default: the CPU count)."""
    image: str | None = None
    """k8s and docker: the image the step containers run (default: the run launcher's)."""
    volumes: list[str] = Field(default_factory=list)
    """docker: bind mounts of each step container, `HOST:CONTAINER` or `HOST:CONTAINER:ro|rw` (absolute paths)."""
    network: str | None = None
    """docker: the docker network each step container joins (`none`: no network; default: the engine's)."""
    env_vars: list[str] = Field(default_factory=list)
    """docker: environment variables passed to each step container by name, their values taken from the
    launching process's environment (so no value, secret or not, is written in eval.yaml).
    """

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value in EXECUTOR_TYPES:
            return value
        supported = ", ".join(EXECUTOR_TYPES)
        if value in UNSUPPORTED_EXECUTORS:
            raise ValueError(f"executor {value!r} is not supported: Dagster has no {UNSUPPORTED_EXECUTORS[value]} "
                             f"executor that runs a run's shards (dagster-dask cannot run DynamicOut, "
                             f"dagster-io/dagster#9785); use one of {supported}")
        raise ValueError(f"unknown executor {value!r}: use one of {supported}")

    @field_validator("volumes")
    @classmethod
    def _bind_mounts(cls, value: list[str]) -> list[str]:
        for mount in value:
            parts = mount.split(":")
            if not (len(parts) in (2, 3) and all(p.startswith("/") for p in parts[:2])
                    and parts[2:] in ([], ["ro"], ["rw"])):
                raise ValueError(f"{mount!r} is not a bind mount: write HOST:CONTAINER or "
                                 "HOST:CONTAINER:ro (or :rw), both absolute paths")
        return value

    @field_validator("env_vars")
    @classmethod
    def _variable_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"{name!r} is not a variable name: list names only (their values "
                                 "come from the environment of `evalh run`)")
        return value

    @model_validator(mode="after")
    def _docker_settings_on_docker(self) -> ExecutorConfig:
        named = [key for key in ("volumes", "network", "env_vars") if getattr(self, key)]
        if named and self.type != "docker":
            raise ValueError(f"{', '.join(named)}: settings of the docker executor; this eval's executor is "
                             f"{self.type!r} (set type: docker, or remove them)")
        return self


class RunConfig(_Strict):
    max_concurrency: int = Field(default=4, ge=1)
    """Cells in flight at once: the one concurrency knob."""
    per_variant_concurrency: int | None = Field(default=None, ge=1)
    """At most this many cells of one variant in flight at once (within `max_concurrency`)."""
    retry: RetryConfig = Field(default_factory=RetryConfig)
    """Which failed cells are tried again, how often, after how long."""
    baseline_variant: str | None = None
    """The variant the others are compared with in the summary (unset: no such comparison)."""
    cost_limit_usd: float | None = Field(default=None, ge=0)
    """Stop starting cells once the run's cost reaches this; cells not run end `cost_limit`."""
    samples_per_case: int = Field(default=1, ge=1)
    """Cells per case and variant: each sample is called and judged on its own (pass^k, flakiness).
    """
    cluster_by: str | None = None
    """A field path of the case (`metadata.document`): cases sharing its value are one cluster in every
    interval and test of the summary, compare and drift. An evalh extension.
    """
    # The Dagster executor of the eval's jobs (defs/evals/executors.py), and the named limits
    # (`pools`) that systems[].pool and judges' `pool` share (across processes through the
    # Dagster instance's database: common/ratelimits/shared.py).
    executor: ExecutorConfig = Field(default_factory=lambda: ExecutorConfig())
    """Which Dagster executor runs the eval's steps, and the named pools."""
    rate_limits: RateLimitSettings = Field(default_factory=RateLimitSettings)
    """How the run meets servers' rate limits. An evalh extension."""
    shards: int | Literal["auto"] = "auto"
    """Parts the run's cells are cut into, each a step of the run's Dagster run: a number, or `auto`
    (from the cells, the systems, the executor and the cores). An evalh extension.
    """
    cells_per_shard: int = Field(default=CELLS_PER_SHARD, ge=1)
    """`shards: auto` gives each shard at least this many cells; a run of fewer than twice as many
    stays one shard in process. An evalh extension.
    """

    @field_validator("shards", mode="before")
    @classmethod
    def _shard_count(cls, value: Any) -> Any:
        if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            return value
        raise ValueError(f"shards must be a whole number of 1 or more, or auto; got {value!r}")

    @field_validator("cluster_by")
    @classmethod
    def _cluster_path(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("cluster_by must be a field path of the case, such as metadata.document")
        return check_field_path(value)


class SignificanceGateConfig(_Strict):
    """``gates.no_significant_regression``: fail only on a regression McNemar's exact test
    finds significant at ``alpha`` (p < alpha, more cases worse than better)."""

    alpha: float = Field(default=0.05, gt=0, lt=1)
    """The significance level: a regression fails the gate when McNemar's exact test gives p < alpha.
    """


class NonInferiorityGateConfig(_Strict):
    """``gates.non_inferiority``: every variant must be shown no worse than its reference by
    more than ``margin``: the lower bound of its pass-rate delta's 95% interval above -margin."""

    margin: float
    """The largest loss of pass rate tolerated, as a share (0.03: three points)."""

    @field_validator("margin")
    @classmethod
    def _share(cls, value: float) -> float:
        if not 0 < value < 1:
            raise ValueError(f"margin must be a share of the pass rate between 0 and 1 (0.03: three points), got {value}")
        return value


class GatesConfig(_Strict):
    """Release gates, checked as Dagster asset checks on each run's summary (an evalh extension).

    A failed gate is a failed (red) check; the run still completes, drift included. With
    ``blocking: true`` (opt-in) a failed gate also fails the Dagster run, and a failed gate on
    the summary stops the run's drift.
    With ``no_significant_regression`` the count-based regression gates (any regressed case
    fails) default to off, since they would fail on the noise the significance gate lets
    through; set them explicitly to keep both.
    """

    no_regressions_vs_baseline_variant: bool = True
    """Fail when a case passes on the baseline variant and fails on another (checked on the summary).
    """
    no_regressions_vs_promoted_baseline: bool = True
    """Fail when a case that passed in the promoted baseline run fails now (checked on drift; passes
    while no run is promoted).
    """
    # On the summary (vs the baseline variant) and on drift (vs the promoted baseline).
    no_significant_regression: SignificanceGateConfig | None = None
    """Fail only on a regression McNemar's exact test finds significant (`true`, or `{alpha: 0.01}`);
    turns the two count-based gates off unless they are set.
    """
    non_inferiority: NonInferiorityGateConfig | None = None
    """Every variant must be shown no worse than its reference by more than `margin` (the lower bound
    of the pass-rate delta's 95% interval).
    """
    pass_rate_floor: float | None = Field(default=None, ge=0, le=1)
    """Fail when a variant's pass rate is below this share."""
    max_errored_fraction: float | None = Field(default=None, ge=0, le=1)
    """Fail when more than this share of a variant's cells errored."""
    blocking: bool = False
    """A failed gate also fails the Dagster run (and stops the run's drift), not only its check."""

    @field_validator("no_significant_regression", mode="before")
    @classmethod
    def _flag_form(cls, value: Any) -> Any:
        # `no_significant_regression: true` means the default alpha; `false` means off.
        if value is True:
            return {}
        if value is False:
            return None
        return value

    @model_validator(mode="after")
    def _significance_replaces_counts(self) -> GatesConfig:
        if self.no_significant_regression is not None:
            for key in ("no_regressions_vs_baseline_variant", "no_regressions_vs_promoted_baseline"):
                if key not in self.model_fields_set:
                    setattr(self, key, False)
        return self


class ScheduleConfig(_Strict):
    """When the eval's ``<eval>__scheduled_drift`` sensor starts a new run (an evalh extension).

    ``drift_cron`` is a five-field cron expression read in ``timezone`` (an IANA name); the
    sensor starts one run per tick.
    """

    drift_cron: str = "0 0 * * *"
    """A five-field cron expression: when the `<eval>__scheduled_drift` sensor starts a run."""
    timezone: str = "UTC"
    """The IANA time zone the cron is read in."""

    @field_validator("drift_cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        parse_cron(value)  # CronError is a ValueError: reported at schedule.drift_cron with the line
        return value

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (an IANA name such as UTC or Europe/Paris)") from None
        return value


class AutomationConfig(_Strict):
    """Which of the eval's sensors run by default in the Dagster daemon (an evalh extension).

    ``on_fixture_change: true`` starts ``<eval>__fixtures_changed`` running; a ``drift_cron``
    starts ``<eval>__scheduled_drift`` running on that cron (read in ``schedule.timezone``;
    without it the sensor uses ``schedule.drift_cron`` and is stopped until turned on in the UI).
    ``reuse_unchanged_traces: true`` makes a fixture-change run start from the traces of the
    eval's latest complete run whose case, variant and fixture hashes are unchanged (as
    ``evalh run --reuse``): only new or changed cells call the system.
    """

    on_fixture_change: bool = False
    """Start the `<eval>__fixtures_changed` sensor running: a commit that changes the eval's files
    starts a run.
    """
    drift_cron: str | None = None
    """Start `<eval>__scheduled_drift` running on this cron (read in `schedule.timezone`)."""
    reuse_unchanged_traces: bool = False
    """A fixture-change run starts from the traces of the latest complete run whose case, variant and
    fixture hashes are unchanged (as `evalh run --reuse`).
    """

    @field_validator("drift_cron")
    @classmethod
    def _valid_cron(cls, value: str | None) -> str | None:
        from evalh_pipeline.config.cron import parse_cron

        if value is not None:
            parse_cron(value)
        return value


class MetricsConfig(_Strict):
    price_table_path: str | None = None
    """Your own token price table (YAML), used before the built-in one to price cells that report
    tokens but no cost.
    """


class OutputConfig(BaseModel):
    """One ``output[]`` entry: a runs folder (``local_files``) or a trace store of another type.

    The keys of each type are validated by its own config model (outputs/registry.py).
    """

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    type: str = "local_files"
    """`local_files` (a runs folder or an fsspec URL: the first is the canonical place of the runs,
    later ones mirrors), or a trace store (`sqlite`, `postgres`, `otel`, `webhook`, a plugin's).
    """
    path: str | None = None
    """`local_files`: the folder or URL (`s3://bucket/runs`) the runs are written to (default:
    `./runs`).
    """


class EvalConfig(_Strict):
    """The whole of one eval.yaml."""

    schema_version: str = "1.0"
    """The eval-harness format version of this file."""
    eval: EvalInfo
    """The eval's name and description."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free data, copied into the summary."""
    dataset: DatasetConfig
    """Where the cases come from."""
    systems: list[SystemConfig] = Field(min_length=1)
    """The variants under test: every case runs on each."""
    workspace: WorkspaceConfig | None = None
    """The files each cell works in (coding agents)."""
    trace: TraceCaptureConfig | None = None
    """Which parts of each trace are kept."""
    evaluators: list[EvaluatorConfig] = Field(default_factory=list)
    """How each trace is judged; a case may add its own."""
    pass_criteria: PassCriteria = Field(default_factory=PassCriteria)
    """Which evaluators decide whether a case passes."""
    run: RunConfig = Field(default_factory=RunConfig)
    """How the run is executed: concurrency, retries, shards, executor, rate limits."""
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    """Cost accounting."""
    gates: GatesConfig = Field(default_factory=GatesConfig)
    """Release gates, checked as Dagster asset checks. An evalh extension."""
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    """When scheduled drift runs start. An evalh extension."""
    automation: AutomationConfig = Field(default_factory=AutomationConfig)
    """Which sensors run by default in the Dagster daemon. An evalh extension."""
    output: list[OutputConfig] = Field(default_factory=lambda: [OutputConfig()])
    """Where runs are written (a folder or URL) and the trace stores they are published to."""

    @field_validator("output", mode="before")
    @classmethod
    def _single_output(cls, value: Any) -> Any:
        # eval-harness accepts a single mapping as well as a list.
        return [value] if isinstance(value, dict) else value

    @field_validator("schema_version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> Any:
        return str(value)
