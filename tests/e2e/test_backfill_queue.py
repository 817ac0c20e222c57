"""A backfill over dozens of runs queues on the instance evalh creates, under a real dagster-daemon.

Against the session's `dagster dev` (webserver + daemon; dagster.yaml as evalh writes it: the
queued run coordinator, at most EVAL_RUNS_IN_FLIGHT runs per eval and per backfill): a
backfill of the `queued` eval's stages over 40 partitions never has more than 4 runs in flight
at any sampled moment, whether submitted as the UI's **Jobs** → `<eval>__run` → **Materialize
all** → **All** → **Launch backfill** submits it (GraphQL `launchPartitionBackfill` with the
job's partition set: a job backfill, whose runs carry the job's `evalh/eval` tag) or from the
global asset graph (the same mutation with only the asset selection: an asset backfill, whose
runs are Dagster's implicit asset job's and carry no eval tag): the runs are held in flight
until the bound is reached and the queue daemon has passed over the queue twice more, then released; the others wait QUEUED (the daemon submits a
backfill's runs in chunks) and drain. The test cancels the backfill once the held runs and
a whole wave after them from the queue have finished (8 runs), so it stays short.
"""

from __future__ import annotations

import time

import dagster as dg
import pytest

from evalh_pipeline.defs.evals.names import EVAL_TAG, STAGES
from evalh_pipeline.defs.instance_config import EVAL_RUNS_IN_FLIGHT
from tests.e2e.support import graphql

pytestmark = pytest.mark.e2e

EVAL = "queued"
# Ten times the bound, and more than the 25 runs the daemon submits of a job backfill at a
# time. The daemon submits an asset backfill's runs one by one for as long as the test runs:
# every partition more is daemon CPU taken from the runs the test waits on.
PARTITIONS = 40
FINISHED_ENOUGH = 2 * EVAL_RUNS_IN_FLIGHT  # the held runs, then as many started from the queue
IN_FLIGHT = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]

BACKFILL = """
mutation Backfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
  }
}
"""
CANCEL = """
mutation Cancel($id: String!) {
  cancelPartitionBackfill(backfillId: $id) {
    __typename
    ... on PythonError { message }
  }
}
"""


class _Sampler:
    """Samples the eval's runs, asserting at each sample that at most EVAL_RUNS_IN_FLIGHT are in flight."""

    def __init__(self, instance: dg.DagsterInstance, backfill: str) -> None:
        self.instance, self.backfill = instance, backfill
        self.samples = self.most_in_flight = self.most_queued = 0

    def sample(self) -> tuple[list[dg.DagsterRun], list[dg.DagsterRun], list[dg.DagsterRun]]:
        # One read of the run storage per sample: in flight and queued at the same moment.
        # The backfill's runs, by its tag: an asset backfill's runs carry no eval tag.
        runs = self.instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": self.backfill}))
        in_flight = [r for r in runs if r.status in IN_FLIGHT]
        queued = [r for r in runs if r.status == dg.DagsterRunStatus.QUEUED]
        finished = [r for r in runs if r.is_finished]
        self.samples += 1
        self.most_in_flight = max(self.most_in_flight, len(in_flight))
        self.most_queued = max(self.most_queued, len(queued))
        assert len(in_flight) <= EVAL_RUNS_IN_FLIGHT, [(r.run_id, r.status) for r in in_flight]
        return in_flight, queued, finished

    def until(self, condition, what: str, log) -> None:
        deadline = time.monotonic() + 900  # a bound for a loaded machine, not a pace
        while not condition(*self.sample()):
            assert time.monotonic() < deadline, f"timed out waiting for {what}\n{log.read_text()[-4000:]}"
            time.sleep(0.5)


def _queue_passes(log) -> int:
    """How many times the run queue daemon has looked at the queue (one log line per pass)."""
    return log.read_text().count("checking tag concurrency limits for queued runs")


# The parameters the launch dialog sends for "All" partitions: from a job page, with the job's
# partition set (a job backfill); from the global asset graph, the assets only (an asset backfill).
JOB_PAGE = {"selector": {"partitionSetName": f"{EVAL}__run_partition_set",
                         "repositorySelector": {"repositoryLocationName": "evalh_pipeline",
                                                "repositoryName": "__repository__"}}}
ASSET_GRAPH: dict = {}
ROUTES = {"job page": (JOB_PAGE, {EVAL}, {f"{EVAL}__run"}), "asset graph": (ASSET_GRAPH, {None}, {"__ASSET_JOB"})}


@pytest.mark.parametrize("route", list(ROUTES))
def test_a_backfill_over_40_runs_keeps_at_most_4_in_flight_and_the_rest_queued(dagster_dev, route):
    where, eval_tags, job_names = ROUTES[route]
    instance = dagster_dev.instance()
    gate = dagster_dev.repo / "evals" / EVAL / "gate"
    gate.write_text("")  # every run's one cell waits until the test removes it
    keys = [f"backfilled_{route.replace(' ', '_')}_{i:03d}" for i in range(PARTITIONS)]
    instance.add_dynamic_partitions(f"{EVAL}__runs", keys)
    launched = graphql(dagster_dev.url, BACKFILL, {"params": {
        **where,
        "partitionNames": keys,
        "assetSelection": [{"path": [EVAL, stage]} for stage in STAGES],
        "fromFailure": False,
        "tags": [{"key": "dagster/from_ui", "value": "true"}],
    }})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill = launched["backfillId"]
    sampler = _Sampler(instance, backfill)
    log = dagster_dev.log
    try:
        # The runs pile up in flight (held by the gate) until the bound: 4, all started.
        sampler.until(lambda in_flight, queued, finished: len(in_flight) == EVAL_RUNS_IN_FLIGHT
                      and all(r.status == dg.DagsterRunStatus.STARTED for r in in_flight) and queued,
                      "4 runs held in flight", log)
        # The queue daemon looks at the queue twice more and starts none: the rest stay queued.
        passes = _queue_passes(log)
        sampler.until(lambda *_: _queue_passes(log) >= passes + 2, "two more passes of the run queue", log)
        in_flight, queued, _ = sampler.sample()
        assert len(in_flight) == EVAL_RUNS_IN_FLIGHT and len(queued) >= EVAL_RUNS_IN_FLIGHT
        # Released, they drain in turn, never more than 4 at once.
        gate.unlink()
        sampler.until(lambda in_flight, queued, finished: len(finished) >= FINISHED_ENOUGH,
                      f"{FINISHED_ENOUGH} runs to finish", log)
    finally:
        gate.unlink(missing_ok=True)
        graphql(dagster_dev.url, CANCEL, {"id": backfill})
        for run in instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill},
                                                   statuses=[dg.DagsterRunStatus.QUEUED])):
            instance.report_run_canceled(run, "the backfill test saw enough")

    print(f"{sampler.samples} samples: at most {sampler.most_in_flight} in flight, "
          f"at most {sampler.most_queued} queued")
    finished = [r for r in instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill}))
                if r.status == dg.DagsterRunStatus.SUCCESS]
    assert len(finished) >= FINISHED_ENOUGH
    assert sampler.most_in_flight == EVAL_RUNS_IN_FLIGHT
    backfilled = instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill}))
    assert {r.tags.get(EVAL_TAG) for r in backfilled} == eval_tags
    assert {r.job_name for r in backfilled} == job_names
