"""What the e2e tests share: evals whose agents hang or wait on a file (so a test can act while a
run is in flight), the git repository `dagster dev` loads them from, waiting on the instance for
runs, reading their events, Dagster's GraphQL API."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg

from tests.support.evals import write_eval

T = TypeVar("T")

# A system for the resume tests: it logs every call (case, variant, pid) to calls.log beside it,
# and a case whose input says `hang` waits while the file `hold` beside it exists, so a test can
# kill the run while some cells have a trace and others have none.
HANGING_AGENT = """
import asyncio, json, os
from pathlib import Path

HERE = Path(__file__).resolve().parent


async def run(case, variant):
    with open(HERE / "calls.log", "a") as f:
        f.write(json.dumps([case["id"], variant["name"], os.getpid()]) + "\\n")
    while case["input"].get("hang") and (HERE / "hold").exists():
        await asyncio.sleep(0.1)
    return {"final_answer": case["input"]["answer"], "tool_calls": [{"name": "lookup", "arguments": {}}]}
"""
HANGING_CASES = 6  # the last two hang
HANGING_SYSTEMS = """
  - name: base
    adapter: python_function
    target: hanging_agent:run
  - name: candidate
    adapter: python_function
    target: hanging_agent:run
"""
# One case, one variant, no work: the backfill test's runs cost little. Its answer waits while the
# file `gate` beside it exists, so the test can hold the runs in flight and watch the queue.
GATED_AGENT = """
import asyncio
from pathlib import Path

HERE = Path(__file__).resolve().parent


async def run(case, variant):
    while (HERE / "gate").exists():
        await asyncio.sleep(0.1)
    return {"final_answer": case["input"]["answer"], "tool_calls": [{"name": "lookup", "arguments": {}}]}
"""
GATED_SYSTEMS = """
  - name: base
    adapter: python_function
    target: gated_agent:run
    timeout_seconds: 900
"""


# The drift cron of the `drifting` eval while its test does not watch it: no tick during a suite.
YEARLY_CRON = "0 0 1 1 *"


def hanging_eval(folder: Path) -> Path:
    """An eval of HANGING_CASES cases on the hanging agent, its last two cases hanging while `hold` exists."""
    path = write_eval(folder, cases=HANGING_CASES, systems=HANGING_SYSTEMS)
    (folder / "hanging_agent.py").write_text(HANGING_AGENT)
    cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    for case in cases[-2:]:
        case["input"]["hang"] = True
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``: its stdout; a failure asserts with git's own words."""
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60)
    # git's own words in the failure: which lock, which file (a bare exit status 128 says nothing).
    assert done.returncode == 0, f"git {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}"
    return done.stdout.strip()


def commit(repo: Path, message: str) -> str:
    """Commit everything in ``repo``; the new commit's hash."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


# Between two looks at the instance (a cheap SQLite query): every look later than needed is
# time the suite waits on a result that is already there.
POLL_S = 0.25


def wait_for(condition: Callable[[], T | None], timeout: float, what: str, log: Path, poll: float = POLL_S) -> T:
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

    return wait_for(latest, timeout, f"a finished {job} run", log)


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
