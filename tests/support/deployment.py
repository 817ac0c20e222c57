"""Helpers of the deployment tests (tests/deploy, tests/runner/test_deployment.py, tests/cli's
URL-output tests): the team's dagster.yaml, an eval with a given executor or outputs."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.evals import write_eval
from tests.support.paths import REPO

TEAM_YAML = REPO / "deploy" / "dagster.yaml"  # the one copy the docs show


def team_home(tmp_path: Path) -> Path:
    """A DAGSTER_HOME holding the team's dagster.yaml (PostgreSQL: its DAGSTER_PG_* from the environment)."""
    home = tmp_path / "team_home"
    home.mkdir()
    shutil.copy(TEAM_YAML, home / "dagster.yaml")
    return home


def with_outputs(path: Path, *outputs: str) -> Path:
    """The eval file ``path`` with its ``output`` list replaced by local_files ``outputs`` (paths or URLs)."""
    text = path.read_text()
    start = text.index("output:\n")
    end = text.index("\n", text.index("    path: ", start)) + 1
    entries = "".join(f"  - type: local_files\n    path: {target}\n" for target in outputs)
    path.write_text(text[:start] + "output:\n" + entries + text[end:])
    return path


def executor_eval(folder: Path, executor: str, output: str | None = None) -> Path:
    """A two-case toy eval in ``folder`` whose ``run.executor`` is ``executor`` (YAML), writing to ``output``."""
    path = write_eval(folder, cases=2)
    text = path.read_text().replace("  max_concurrency: 4\n", f"  max_concurrency: 4\n  executor: {executor}\n")
    if output:
        text = text.replace(f"    path: {folder / 'runs'}\n", f"    path: {output}\n")
    path.write_text(text)
    return path


def verdicts(summary: dict) -> dict:
    """What a summary (summary.yaml, loaded) concludes: pass counts, regressions and p-values per
    variant; runs of one eval that must agree compare these (not times, paths or run ids)."""
    deltas = (summary.get("comparison") or {}).get("deltas") or []
    return {
        "variants": {v["name"]: (v["cases_total"], v["cases_passed"], v["cases_errored"]) for v in summary["variants"]},
        "deltas": {d["variant"]: (sorted(d["regressions"]), sorted(d["improvements"]),
                                  (d.get("significance") or {}).get("p_value")) for d in deltas},
    }
