"""The dagster.yaml evalh writes for a local instance (``./.dagster_home``, ``./dev``).

Runs launched from the UI, by a sensor or by a backfill go through Dagster's queued run
coordinator (the daemon starts them): one partition (eval run) never has two runs at once,
and an eval has at most ``EVAL_RUNS_IN_FLIGHT`` runs in flight, so a "Missing"/"All" backfill
over thousands of partitions queues instead of launching thousands of paid runs at once. A
backfill is bounded by its own tag too: one launched from the global asset graph (not from a
job page) runs Dagster's implicit asset job, whose runs carry no ``evalh/eval`` tag.
The CLI executes its run in its own process (no coordinator). Each stage that writes holds
the run directory's lock (a resuming command holds it throughout), so a queued run of the
same partition waits at its first write instead of interleaving with the CLI's.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HOME = ".dagster_home"


def instance_home() -> Path:
    """``$DAGSTER_HOME`` if set, else ``./.dagster_home`` (no Dagster import: a dry run reads it too)."""
    home = os.environ.get("DAGSTER_HOME")
    return Path(home) if home else Path(DEFAULT_HOME).resolve()

EVAL_RUNS_IN_FLIGHT = 4
MAX_CONCURRENT_RUNS = 8
DEQUEUE_INTERVAL_SECONDS = 2

INSTANCE_YAML = f"""\
# Written by evalh for a local, embedded Dagster instance. `dagster dev` with
# DAGSTER_HOME pointing here shows the runs `evalh` made.
telemetry:
  enabled: false
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
  config:
    # The daemon looks at the queue every 2 s (Dagster's default is 5 s): a run launched from
    # the UI, a sensor or a backfill starts that much sooner; a look at an empty queue is one query.
    dequeue_interval_seconds: {DEQUEUE_INTERVAL_SECONDS}
    max_concurrent_runs: {MAX_CONCURRENT_RUNS}
    tag_concurrency_limits:
      # One run at a time per partition (eval run) ...
      - key: "dagster/partition"
        value:
          applyLimitPerUniqueValue: true
        limit: 1
      # ... and a bounded number per eval.
      - key: "evalh/eval"
        value:
          applyLimitPerUniqueValue: true
        limit: {EVAL_RUNS_IN_FLIGHT}
      # ... and per backfill, however launched (the global asset graph's runs have no eval tag).
      - key: "dagster/backfill"
        value:
          applyLimitPerUniqueValue: true
        limit: {EVAL_RUNS_IN_FLIGHT}
"""
