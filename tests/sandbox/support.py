"""Helpers of the sandbox tests: an eval folder in a sandbox, and reading a run's records."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

from tests.support.evalh_process import run_evalh

from tests.support.paths import REPO
from tests.sandbox.engine import IMAGE, Engine

SANDBOX_EVAL = REPO / "evals" / "coding_agent_sandbox"


def copy_sandbox_eval(folder: Path) -> Path:
    """evals/coding_agent_sandbox copied to ``folder``; its eval.yaml."""
    shutil.copytree(SANDBOX_EVAL, folder)
    return folder / "eval.yaml"


def write_sandbox_eval(folder: Path, systems: str, *, workspace: str = "", evaluators: str = "", cases: int = 1,
                       extra: str = "", concurrency: int = 2) -> Path:
    """An eval whose cells run in a docker_volume workspace seeded from a small fixture."""
    fixture = folder / "fixture"
    (fixture / "src").mkdir(parents=True)
    (fixture / "src" / "app.txt").write_text("version 1\n")
    (fixture / "README.md").write_text("do not touch\n")
    (folder / "cases.yaml").write_text("cases:\n" + "".join(f"  - id: case_{i}\n    input: {{n: {i}}}\n" for i in range(cases)))
    def block(text: str) -> str:
        return textwrap.indent(textwrap.dedent(text).strip(), "  ") + "\n" if text.strip() else ""

    text = ("eval:\n  name: sandboxed\ndataset:\n  type: yaml\n  path: cases.yaml\nsystems:\n" + block(systems)
            + f"workspace:\n  type: docker_volume\n  image: {IMAGE}\n  copy_from: fixture\n" + block(workspace)
            + "evaluators:\n" + block(evaluators or "- {name: changed, type: git_diff}")
            + f"run:\n  max_concurrency: {concurrency}\n" + block(extra))
    path = folder / "eval.yaml"
    path.write_text(text)
    return path


def run_in(engine: Engine, eval_path: Path, env: dict[str, str], *args: str, timeout: float = 600):
    """`evalh run` of ``eval_path`` against the test engine; the CompletedProcess and the run folder."""
    done = run_evalh(["run", str(eval_path), *args], {**env, "DOCKER_HOST": engine.host}, eval_path.parent,
                     timeout=timeout)
    folder = eval_path.parent / "runs"
    assert folder.is_dir(), f"no run was made: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done, sorted(p for p in folder.iterdir() if p.name != "baselines")[-1]


def records(run_dir: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / name).read_text().splitlines() if line.strip()]


def traces_by_variant(run_dir: Path) -> dict[str, dict]:
    return {t["variant_name"]: t for t in records(run_dir, "traces.jsonl")}


def leftover_sandboxes(engine: Engine) -> list[str]:
    """Containers and volumes of evalh sandboxes still on the engine."""
    containers = engine.docker("ps", "-aq", "--filter", "label=evalh.sandbox").stdout.decode().split()
    volumes = engine.docker("volume", "ls", "-q", "--filter", "label=evalh.sandbox").stdout.decode().split()
    return containers + volumes
