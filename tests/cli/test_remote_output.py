"""`evalh run` with output[] at URLs: the run lands at the canonical URL, mirror failures only warn."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.deployment import with_outputs
from tests.support.evalh_process import run_evalh

from tests.support.evals import write_eval


def _files(folder: Path) -> dict[str, bytes]:
    """What a publish copies: not hidden top-level entries, nor the results store (results.jsonl holds its lines)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and not p.relative_to(folder).parts[0].startswith(".")
            and p.relative_to(folder).parts[0] != "results"}


def test_run_with_a_file_url_output_publishes_the_run_and_records_a_failing_mirror(tmp_path, env):
    remote = tmp_path / "remote" / "runs"
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the mirror wants a folder\n")
    path = with_outputs(write_eval(tmp_path / "toy", cases=3), f"file://{remote}", f"file://{blocker}/runs")
    env = {**env, "EVALH_CACHE_DIR": str(tmp_path / "cache")}

    proc = run_evalh(["run", str(path)], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    (published,) = [p for p in remote.iterdir()]
    assert f"published to: file://{remote}/{published.name}" in proc.stdout
    assert "warning:" in proc.stderr and f"mirror file://{blocker}/runs not updated" in proc.stderr
    # The engine worked in the local cache; the remote copy holds the same files after the last stage.
    (working,) = (tmp_path / "cache" / "runs").glob(f"*/{published.name}")
    assert _files(published) == _files(working)
    assert {"run.json", "cases.jsonl", "traces.jsonl", "results.jsonl", "summary.yaml", "report.md",
            "publish.jsonl"} <= set(_files(published))
    stages = [json.loads(line)["stage"] for line in (published / "publish.jsonl").read_text().splitlines()]
    assert stages[:4] == ["cases", "traces", "results", "summary"]
    assert not (tmp_path / "toy" / "runs").exists()

    # The read-only commands take the published run's URL and read a fetched copy.
    run_url = f"file://{published}"
    shown = run_evalh(["inspect", run_url, "--limit", "1"], env, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"matching cells in {published.name}" in shown.stdout
    compared = run_evalh(["compare", run_url, str(working), "--json"], env, tmp_path)
    assert compared.returncode == 0, compared.stderr
    comparison = json.loads(compared.stdout)["comparison"]
    assert comparison["baseline"] == published.name and all(not d["regressions"] for d in comparison["deltas"])
    missing = run_evalh(["inspect", f"file://{remote}/no-such-run"], env, tmp_path)
    assert missing.returncode == 2 and "no run.json" in missing.stderr
