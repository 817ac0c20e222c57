"""Every name the Dagster layer gives an eval's objects, built in one place.

The README, the CLI and the tests refer to these names; change them here only.
"""

from __future__ import annotations

import hashlib

import re

STAGES = ("cases", "traces", "results", "summary", "drift")

# Tags on the Dagster runs of an eval. Which eval run a Dagster run works on is never a tag
# of ours: it is the run's partition key (the run id), Dagster's own `dagster/partition`.
EVAL_TAG = "evalh/eval"
TRIGGER_TAG = "evalh/trigger"  # cli | fixtures | schedule (absent: launched from the UI)
FIXTURE_COMMIT_TAG = "evalh/fixture_commit"
FIXTURE_KEY_TAG = "evalh/fixture_key"
DRIFT_TICK_TAG = "evalh/drift_tick"
# The earlier run whose unchanged traces a run copies (a run directory, or a run id in the
# eval's runs folder): `evalh run --reuse`, or the fixture sensor with
# `automation.reuse_unchanged_traces`.
REUSE_FROM_TAG = "evalh/reuse_from"
REJUDGE_TAG = "evalh/rejudge"  # "all": re-judge every result (`evalh re-evaluate --all`)
REPEATS_TAG = "evalh/repeat_judging"  # K: how often the judge-consistency job judges each trace
PARTITION_TAG = "dagster/partition"  # Dagster's own: the partition key of a partitioned run
# On the CLI's runs: the eval file and the run directory it worked on (absolute paths), so a
# run whose evalh was killed can say which command finishes it (defs/cli_runs.py).
EVAL_FILE_TAG = "evalh/eval_file"
RUN_DIR_TAG = "evalh/run_dir"
# The code location's one sensor that marks failed the CLI runs whose evalh was killed.
ABANDONED_RUNS_SENSOR = "evalh_abandoned_cli_runs"

# A run id names a run folder and is a partition key: letters, digits, `_`, `-` and `.`,
# starting with a letter or digit, never `...` (Dagster refuses it in a partition key).
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
MAX_RUN_ID = 200
RUN_ID_RULE = "letters, digits, '_', '-' and '.' (no '...'), starting with a letter or digit, at most 200 characters"


def run_id_problem(run_id: str) -> str:
    """Why ``run_id`` cannot be a run id (a run folder and a partition key); "" if it can."""
    if not _RUN_ID.fullmatch(run_id) or "..." in run_id or len(run_id) > MAX_RUN_ID:
        return f"{run_id!r} cannot be a run id (a partition key and a folder name): use {RUN_ID_RULE}"
    return ""


def runs_partitions(eval_name: str) -> str:
    """The name of the eval's dynamic partitions definition: one partition per run (key = run id)."""
    return f"{eval_name}__runs"


def run_job(eval_name: str) -> str:
    """The job that makes a whole run: cases -> traces -> results -> summary -> drift, with every check."""
    return f"{eval_name}__run"


def judge_job(eval_name: str) -> str:
    """Re-judge a run's persisted traces: results -> summary -> drift (never calls the system)."""
    return f"{eval_name}__judge"


# The longest eval name an op inside a graph asset is named after in full. A step's key is
# "<graph>.<op>[mapping key]" and Dagster's file system storage makes it one path component
# (at most 255 bytes): with a 128-character eval name in both halves it would not fit.
_OP_PREFIX_MAX = 48


def op_prefix(eval_name: str) -> str:
    """The prefix of the eval's ops inside its graph assets: the name, or for a long one its
    start and 8 hex digits of its sha256 (op names stay unique across evals)."""
    if len(eval_name) <= _OP_PREFIX_MAX:
        return eval_name
    digest = hashlib.sha256(eval_name.encode("utf-8")).hexdigest()[:8]
    return f"{eval_name[:_OP_PREFIX_MAX - 9]}_{digest}"


STEP_VALUES_SUFFIX = "__step_values"


def step_values_key(eval_name: str) -> str:
    """The resource key of the I/O manager of the eval's graph steps (defs/evals/step_values.py)."""
    return f"{op_prefix(eval_name)}{STEP_VALUES_SUFFIX}"


def judge_consistency_job(eval_name: str) -> str:
    """Judge a run's persisted traces K times with each judge: flip rates, results untouched."""
    return f"{eval_name}__judge_consistency"


def promote_job(eval_name: str) -> str:
    """Make a run (the partition picked at launch) the eval's baseline."""
    return f"{eval_name}__promote"


def fixture_sensor(eval_name: str) -> str:
    return f"{eval_name}__fixtures_changed"


def drift_sensor(eval_name: str) -> str:
    return f"{eval_name}__scheduled_drift"
