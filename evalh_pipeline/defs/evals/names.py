"""Every name the Dagster layer gives an eval's objects, built in one place.

The README, the CLI and the tests refer to these names; change them here only.
"""

from __future__ import annotations

STAGES = ("cases", "traces", "results", "summary", "drift")
BASELINES_GROUP = "evalh_baselines"

# Tags on the Dagster runs of an eval.
RUN_ID_TAG = "evalh/run_id"  # which eval run (run directory) a Dagster run works on
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


def run_job(eval_name: str) -> str:
    """The job that makes a whole run: cases -> traces -> results -> summary -> drift, with every check."""
    return f"{eval_name}__run"


def judge_job(eval_name: str) -> str:
    """Re-judge a run's persisted traces: results -> summary -> drift (never calls the system)."""
    return f"{eval_name}__judge"


def promote_job(eval_name: str) -> str:
    return f"{eval_name}__promote"


def fixture_sensor(eval_name: str) -> str:
    return f"{eval_name}__fixtures_changed"


def drift_sensor(eval_name: str) -> str:
    return f"{eval_name}__scheduled_drift"
