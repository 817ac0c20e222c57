#!/usr/bin/env python3
"""Workspace benchmark: the tempdir_snapshot cycle against the same cycle done with git.

    python benchmarks/workspace_bench.py             # 10,000 files (~200 MB), 3 rounds
    python benchmarks/workspace_bench.py --quick     # 1,000 files (~20 MB), 2 rounds
    python benchmarks/workspace_bench.py --docker-host unix:///tmp/T/sock --docker-image local/busybox:1
                                                     # also the docker_volume cycle (a sandbox)

Fixture: N text files of ~20 KB in N/10 folders; a stub agent edits one file.

- ours: TempdirSnapshotWorkspace.prepare (seed by cp --reflink=auto -a + before manifest),
  the edit, collect_artifacts (after manifest, every file hashed again; diff, before/ after/
  diff.txt artifact.json published into the run's artifacts folder) and cleanup.
- git: ``cp -r``, ``git init && git add -A && git commit``, the edit, ``git add -A &&
  git diff --cached``.

- docker_volume (with ``--docker-host``): the same cycle in a sandbox: prepare (host seed and
  before manifest, then a container and a tmpfs volume, the tree copied in), the edit done
  inside the container (``docker exec``), collect (freeze, copy the volume out, then the same
  collection) and cleanup (container, volume, host folders). Compared with tempdir_snapshot.

Rounds alternate (ours, git, ours, git...) in one invocation, with the page cache warm for
both; removing the previous round's folders is not timed. Target: median ours / median
git <= 1.0. Results go to benchmarks/out/workspace_results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from evalh_pipeline.models import EvalCase, RunVariant  # noqa: E402
from evalh_pipeline.workspaces.base import WorkspaceContext  # noqa: E402
from evalh_pipeline.workspaces.manifest import HASH_ALGORITHM  # noqa: E402
from evalh_pipeline.common.trees import remove_tree  # noqa: E402
from evalh_pipeline.workspaces.tempdir_snapshot import TempdirSnapshotWorkspace  # noqa: E402

FILE_BYTES = 20_000
EDITED = "dir_0500/file_05000.txt"
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "init.defaultBranch=main"]


def make_fixture(root: Path, files: int) -> int:
    """``files`` hex-text files of ~20 KB, ten per folder; returns the bytes written."""
    total = 0
    for i in range(files):
        folder = root / f"dir_{i // 10:04d}"
        if i % 10 == 0:
            folder.mkdir(parents=True)
        raw = os.urandom(FILE_BYTES // 2 - 320).hex()
        text = "\n".join(raw[j:j + 64] for j in range(0, len(raw), 64)) + "\n"
        (folder / f"file_{i:05d}.txt").write_text(text)
        total += len(text)
    return total


def edit(root: Path, edited: str) -> None:
    with (root / edited).open("a") as handle:
        handle.write("edited by the stub agent\n")


def ours(eval_dir: Path, work: Path, round_no: int, edited: str) -> tuple[float, dict[str, float], dict]:
    run_dir = work / "runs" / f"run-{round_no}"
    context = WorkspaceContext(eval_dir=eval_dir, runs_root=str(work / "runs"), run_dir=run_dir, run_id=run_dir.name)
    adapter = TempdirSnapshotWorkspace({"type": "tempdir_snapshot", "copy_from": "fixture"}, context)
    case = EvalCase.model_validate({"id": f"case_{round_no}", "input": {}})
    variant = RunVariant(name="stub", adapter="python_function")
    started = time.perf_counter()
    workspace = adapter.prepare(case, variant)
    prepared = time.perf_counter()
    edit(workspace.path, edited)
    edited_at = time.perf_counter()
    artifact = adapter.collect_artifacts(workspace)
    collected = time.perf_counter()
    accounting = adapter.cleanup(workspace)
    finished = time.perf_counter()
    assert artifact.diff.modified == [edited] and not artifact.diff.added and not artifact.diff.removed, artifact.diff
    phases = {"seed+before_manifest": prepared - started, "after_manifest+diff+artifacts": collected - edited_at,
              "cleanup": finished - collected}
    total = finished - started - (edited_at - prepared)
    return total, phases, accounting.as_dict()


def sandboxed(eval_dir: Path, work: Path, round_no: int, edited: str, host: str, image: str
              ) -> tuple[float, dict[str, float]]:
    """The docker_volume cycle; the edit runs in the container and is not timed."""
    from evalh_pipeline.workspaces.docker_volume import DockerVolumeWorkspace

    run_dir = work / "runs" / f"sandbox-{round_no}"
    context = WorkspaceContext(eval_dir=eval_dir, runs_root=str(work / "runs"), run_dir=run_dir, run_id=run_dir.name,
                               env={**os.environ, "DOCKER_HOST": host})
    adapter = DockerVolumeWorkspace({"type": "docker_volume", "copy_from": "fixture", "image": image,
                                     "disk": "2g"}, context)
    case = EvalCase.model_validate({"id": f"case_{round_no}", "input": {}})
    variant = RunVariant(name="stub", adapter="cli")
    started = time.perf_counter()
    workspace = adapter.prepare(case, variant)
    prepared = time.perf_counter()
    assert workspace.sandbox is not None
    argv = workspace.sandbox.exec_argv(["sh", "-c", f"echo 'edited by the stub agent' >> {edited}"], env_names=())
    subprocess.run(argv, check=True, env=workspace.sandbox.runtime.env)
    edited_at = time.perf_counter()
    artifact = adapter.collect_artifacts(workspace)
    collected = time.perf_counter()
    adapter.cleanup(workspace)
    finished = time.perf_counter()
    assert artifact.diff.modified == [edited] and not artifact.diff.added and not artifact.diff.removed, artifact.diff
    phases = {"seed+before_manifest+sandbox": prepared - started,
              "freeze+copy_out+after_manifest+diff+artifacts": collected - edited_at, "cleanup": finished - collected}
    return finished - started - (edited_at - prepared), phases


def git_cycle(fixture: Path, work: Path, round_no: int, edited: str) -> float:
    ws = work / f"git-{round_no}"
    started = time.perf_counter()
    subprocess.run(["cp", "-r", str(fixture), str(ws)], check=True)
    subprocess.run([*GIT, "init", "-q"], cwd=ws, check=True, env=GIT_ENV)
    subprocess.run([*GIT, "add", "-A"], cwd=ws, check=True, env=GIT_ENV)
    subprocess.run([*GIT, "commit", "-q", "-m", "before"], cwd=ws, check=True, env=GIT_ENV)
    prepared = time.perf_counter()
    edit(ws, edited)
    edited_at = time.perf_counter()
    subprocess.run([*GIT, "add", "-A"], cwd=ws, check=True, env=GIT_ENV)
    diff = subprocess.run([*GIT, "diff", "--cached"], cwd=ws, check=True, env=GIT_ENV, capture_output=True)
    finished = time.perf_counter()
    assert b"edited by the stub agent" in diff.stdout
    return finished - started - (edited_at - prepared)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 files, 2 rounds")
    parser.add_argument("--files", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--dir", default=None, help="where to build the fixture (default: a temp folder)")
    parser.add_argument("--docker-host", default=None, help="also time docker_volume against this engine")
    parser.add_argument("--docker-image", default="local/busybox:1", help="the sandbox image (needs sh)")
    args = parser.parse_args()
    files = args.files or (1_000 if args.quick else 10_000)
    rounds = args.rounds or (2 if args.quick else 3)
    edited = f"dir_{(files // 2) // 10:04d}/file_{files // 2:05d}.txt"

    base = Path(tempfile.mkdtemp(prefix="evalh-ws-bench-", dir=args.dir))
    try:
        eval_dir = base / "eval"
        fixture = eval_dir / "fixture"
        t0 = time.perf_counter()
        size = make_fixture(fixture, files)
        print(f"fixture: {files} files in {files // 10} folders, {size / 1e6:.0f} MB "
              f"(built in {time.perf_counter() - t0:.1f} s); hash: {HASH_ALGORITHM}; cpus: {os.cpu_count()}")
        work = base / "work"
        work.mkdir()
        ours_times, git_times, last_phases, last_accounting = [], [], {}, {}
        sandbox_times: list[float] = []
        sandbox_phases: dict[str, float] = {}
        for round_no in range(rounds):
            seconds, last_phases, last_accounting = ours(eval_dir, work, round_no, edited)
            ours_times.append(seconds)
            remove_tree(work / "runs" / f"run-{round_no}")
            git_times.append(git_cycle(fixture, work, round_no, edited))
            remove_tree(work / f"git-{round_no}")
            print(f"round {round_no + 1}: ours {ours_times[-1]:.2f} s   git {git_times[-1]:.2f} s   "
                  f"({', '.join(f'{k} {v:.2f}' for k, v in last_phases.items())})")
            if args.docker_host:
                seconds, sandbox_phases = sandboxed(eval_dir, work, round_no, edited, args.docker_host,
                                                    args.docker_image)
                sandbox_times.append(seconds)
                remove_tree(work / "runs" / f"sandbox-{round_no}")
                print(f"         docker_volume {seconds:.2f} s   "
                      f"({', '.join(f'{k} {v:.2f}' for k, v in sandbox_phases.items())})")
        ours_median, git_median = statistics.median(ours_times), statistics.median(git_times)
        ratio = ours_median / git_median
        print(f"median: ours {ours_median:.2f} s, git {git_median:.2f} s, ratio ours/git {ratio:.2f}x "
              f"(target <= 1.0x: {'met' if ratio <= 1.0 else 'NOT met'})")
        if sandbox_times:
            sandbox_median = statistics.median(sandbox_times)
            print(f"median: docker_volume {sandbox_median:.2f} s, {sandbox_median / ours_median:.2f}x tempdir_snapshot")
        print(f"bytes (last round): {json.dumps(last_accounting)}")
        out = HERE / "out"
        out.mkdir(exist_ok=True)
        (out / "workspace_results.json").write_text(json.dumps({
            "files": files, "bytes": size, "rounds": rounds, "hash": HASH_ALGORITHM,
            "ours_seconds": ours_times, "git_seconds": git_times, "ratio_median": ratio,
            "last_round_phases": last_phases, "last_round_accounting": last_accounting,
            "docker_volume_seconds": sandbox_times, "docker_volume_last_round_phases": sandbox_phases,
        }, indent=2) + "\n")
        return 0 if ratio <= 1.0 else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
