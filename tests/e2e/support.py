"""What the e2e tests share: waiting on the instance for runs, reading their events, Dagster's GraphQL API."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg

T = TypeVar("T")


def wait_for(condition: Callable[[], T | None], timeout: float, what: str, log: Path, poll: float = 1.0) -> T:
    """``condition()``'s first truthy value, polled until ``timeout`` s (a generous bound, never a pace)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}\n--- dagster dev log ---\n"
                         f"{log.read_text()[-6000:]}")


def finished_run(instance: dg.DagsterInstance, job: str, log: Path, partition: str | None = None,
                 timeout: float = 300, parent: str | None = None) -> dg.DagsterRun:
    """The latest run of ``job`` (on ``partition``, re-executing ``parent``) once it has finished."""
    def latest() -> dg.DagsterRun | None:
        runs = [r for r in instance.get_runs(dg.RunsFilter(job_name=job))
                if (partition is None or r.tags.get("dagster/partition") == partition)
                and (parent is None or r.parent_run_id == parent)]
        return runs[0] if runs and runs[0].is_finished else None

    return wait_for(latest, timeout, f"a finished {job} run", log, poll=2)


def materialized(instance: dg.DagsterInstance, run_id: str) -> dict[str, Any]:
    """The asset materializations of a Dagster run, by the asset's last key part."""
    return {e.dagster_event.event_specific_data.materialization.asset_key.path[-1]:
            e.dagster_event.event_specific_data.materialization
            for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)}


def graphql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    """One request to the webserver's GraphQL endpoint, as the UI makes it; its ``data``."""
    request = urllib.request.Request(f"{url}/graphql", data=json.dumps({"query": query, "variables": variables or {}})
                                     .encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            body = json.loads(response.read())
    except urllib.error.HTTPError as exc:  # the server's own words, not only its status
        raise AssertionError(f"{exc}: {exc.read().decode(errors='replace')[:4000]}") from None
    assert not body.get("errors"), body["errors"]
    return body["data"]


def sensor_ticks_after(instance: dg.DagsterInstance, name: str, since: float) -> list[Any]:
    """The finished evaluations (ticks) of sensor ``name`` that started after ``since`` (a Unix time)."""
    from dagster._core.definitions.run_request import InstigatorType  # not exported at the top level
    from dagster._core.scheduler.instigation import TickStatus

    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        if state.name == name:
            return [t for t in instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=50)
                    if t.timestamp > since and t.status != TickStatus.STARTED]
    return []
