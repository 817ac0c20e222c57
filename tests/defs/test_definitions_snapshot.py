"""A snapshot of every Dagster definition the bundled evals make.

The snapshot names what a user meets in the UI (asset keys and groups, what each asset
depends on, its partitions, its checks, the jobs, sensors and schedules), not versions or
descriptions: a change to it is a change users see, so it is reviewed as one. After an
intended change, rewrite it with ``EVALH_UPDATE_SNAPSHOTS=1 pytest tests/defs/test_definitions_snapshot.py``.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import dagster as dg

from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.discovery import discover_evals
from tests.support.paths import REPO

SNAPSHOT = Path(__file__).parent / "snapshots" / "definitions.json"


def _partitions(definition: dg.PartitionsDefinition | None) -> str | None:
    if definition is None:
        return None
    name = getattr(definition, "name", None)
    return f"{type(definition).__name__}({name})" if name else type(definition).__name__


def _described(defs: dg.Definitions) -> dict:
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "deps": sorted(parent.to_user_string() for parent in node.parent_keys),
            "partitions": _partitions(node.partitions_def),
            "checks": sorted(check.name for check in node.check_keys),
        }
    repository = defs.get_repository_def()
    return {
        "assets": assets,
        "jobs": sorted(job.name for job in repository.get_all_jobs() if not job.name.startswith("__")),
        "sensors": sorted(
            (s.name, s.minimum_interval_seconds, s.default_status.value) for s in repository.sensor_defs
        ),
        "schedules": sorted(
            (s.name, s.cron_schedule if isinstance(s.cron_schedule, str) else list(s.cron_schedule))
            for s in repository.schedule_defs
        ),
    }


def test_the_bundled_evals_make_exactly_the_definitions_in_the_snapshot():
    specs = discover_evals([REPO / "evals"]).specs
    defs, _ = build_definitions(specs)
    described = json.dumps(_described(defs), indent=2, sort_keys=True) + "\n"
    if os.environ.get("EVALH_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(described)
    expected = SNAPSHOT.read_text()
    diff = "".join(difflib.unified_diff(
        expected.splitlines(keepends=True), described.splitlines(keepends=True), "snapshot", "now"))
    assert not diff, (
        "the Dagster definitions changed; if intended, rewrite the snapshot with "
        "EVALH_UPDATE_SNAPSHOTS=1 pytest tests/defs/test_definitions_snapshot.py and review its diff:\n" + diff
    )
