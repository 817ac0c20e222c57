"""A small eval with a workspace through the runner: python_function and cli systems."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import textwrap

import fsspec
import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.evaluators.base import Evaluator, Verdict
from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.workspaces.artifacts import load_artifact
from evalh_pipeline.workspaces.ownership import OWNER_FILE, create_container

PY_AGENT = '''
from pathlib import Path

def run(case, variant):
    root = Path(variant["_workspace_path"])
    (root / "app.py").write_text("VALUE = %r\\n" % case["input"]["value"])
    if case["input"].get("crash"):
        (root / "half.txt").write_text("partial")
        raise RuntimeError("agent crashed mid-edit")
    return {"final_answer": "edited"}
'''

CLI_AGENT = '''
import json, pathlib, sys
case = json.load(sys.stdin)
pathlib.Path("app.py").write_text("VALUE = %r\\n" % case["input"]["value"])
pathlib.Path("notes.md").write_text("done\\n")
print("edited")
'''


class ChangedApp(Evaluator):
    """Passes when app.py was modified; reads the post-run file through fsspec."""

    async def evaluate(self, case, trace, artifact):
        if artifact is None:
            return Verdict(False, "no artifact")
        fs, root = fsspec.core.url_to_fs(artifact.artifacts_path)
        after = fs.cat_file(f"{root}/after/app.py").decode()
        return Verdict("app.py" in artifact.diff.modified, "app.py changed", detail={"after": after})


@pytest.fixture(autouse=True)
def changed_app():
    EVALUATORS.register("changed_app", ChangedApp)
    yield
    EVALUATORS.unregister("changed_app")


def _write_eval(tmp_path, systems: str, workspace_extra: str = ""):
    folder = tmp_path / "ev"
    (folder / "fixture").mkdir(parents=True)
    (folder / "fixture" / "app.py").write_text("VALUE = 0\n")
    (folder / "fixture" / "README.md").write_text("keep me\n")
    (folder / "py_agent.py").write_text(PY_AGENT)
    (folder / "cli_agent.py").write_text(CLI_AGENT)
    cases = [{"id": "c1", "input": {"value": 1}}, {"id": "c2", "input": {"value": 2}},
             {"id": "boom", "input": {"value": 3, "crash": True}}]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "eval.yaml").write_text(
        "eval:\n  name: ws_e2e\ndataset:\n  type: jsonl\n  path: cases.jsonl\n"
        "systems:\n" + textwrap.indent(systems, "  ")
        + "workspace:\n  type: tempdir_snapshot\n  copy_from: fixture\n" + textwrap.indent(workspace_extra, "  ")
        + "evaluators:\n  - name: changed_app\n    type: changed_app\n"
        + f"output:\n  path: {tmp_path / 'runs'}\n")
    return load_eval(folder / "eval.yaml")


def _run(spec):
    info = prepare_cases(spec, "run-1")
    stats = asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    traces = {json.loads(line)["case_id"] + "/" + json.loads(line)["variant_name"]: json.loads(line)
              for _, line in iter_lines(info.run_dir.traces)}
    results = {r["case_id"] + "/" + r["variant_name"]: r
               for r in (json.loads(line) for _, line in iter_lines(info.run_dir.results))}
    return info.run_dir, stats, traces, results


def test_python_function_run_collects_judges_and_cleans_every_cell(tmp_path):
    spec = _write_eval(tmp_path, "- name: py\n  adapter: python_function\n  target: py_agent:run\n")
    # A workspace left by a killed run of this eval: found and removed by this run.
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True).stdout)
    stale = create_container(tmp_path / "runs" / ".workspaces", "old")
    marker = json.loads((stale / OWNER_FILE).read_text())
    (stale / OWNER_FILE).write_text(json.dumps({**marker, "pid": dead, "process_start": None}))

    run_dir, stats, traces, results = _run(spec)

    assert not stale.exists()
    assert list((tmp_path / "runs" / ".workspaces").iterdir()) == []  # every workspace removed
    assert stats.artifacts == 3 and stats.workspace["leaked_bytes"] == 0
    assert stats.workspace["stale_workspaces_removed"] == 1
    assert results["c1/py"]["passed"] and results["c1/py"]["detail"]["after"] == "VALUE = 1\n"
    # The crashed cell is an errored trace, yet its half-done edit was collected and judged.
    assert traces["boom/py"]["error"]["type"] == "exception"
    assert results["boom/py"]["passed"]
    artifact = load_artifact(spec, run_dir, "boom", "py")
    assert artifact.diff.added == ["half.txt"] and (tmp_path / "runs" / "run-1" / "artifacts").is_dir()
    assert artifact.artifacts_path.startswith(str(run_dir.path))
    assert load_artifact(spec, run_dir, "missing", "py") is None
    summary = write_summary(spec, run_dir)
    assert summary.workspace["workspaces"] == 3 and summary.workspace["mismatch"] is None


def test_cli_run_uses_the_workspace_as_cwd_with_url_storage(tmp_path):
    systems = (f"- name: cli\n  adapter: cli\n  command: [{json.dumps(sys.executable)}, "
               f"{json.dumps(str(tmp_path / 'ev' / 'cli_agent.py'))}]\n  stdin_template: '{{{{ case_json }}}}'\n")
    # memory:// is refused at load (gone when the process exits): a file:// URL outside the run.
    spec = _write_eval(tmp_path, systems, f"object_storage: file://{tmp_path / 'store'}\n")
    run_dir, stats, traces, results = _run(spec)
    assert traces["c2/cli"]["error"] is None and traces["c2/cli"]["output"]["final_answer"] == "edited"
    assert results["c2/cli"]["passed"] and results["c2/cli"]["detail"]["after"] == "VALUE = 2\n"
    artifact = load_artifact(spec, run_dir, "c2", "cli")
    assert artifact.artifacts_path == str(tmp_path / "store" / "run-1" / "c2" / "cli")
    assert artifact.diff.added == ["notes.md"] and artifact.diff.modified == ["app.py"]
    assert not (tmp_path / "ev" / "fixture" / "notes.md").exists()
    assert not (run_dir.path / "artifacts").exists()


FLAKY_AGENT = '''
from pathlib import Path

def run(case, variant):
    root = Path(variant["_workspace_path"])
    attempts = root.parent.parent / "attempts.txt"  # beside the containers, outside any workspace
    count = int(attempts.read_text()) + 1 if attempts.exists() else 1
    attempts.write_text(str(count))
    (root / "app.py").write_text((root / "app.py").read_text() + "# attempt %d\\n" % count)
    if count == 1:
        raise RuntimeError("first attempt fails after editing")
    return {"final_answer": "edited"}
'''


def test_retry_reseeds_the_workspace_so_attempts_do_not_stack(tmp_path):
    spec = _write_eval(tmp_path, "- name: py\n  adapter: python_function\n  target: flaky_agent:run\n")
    (tmp_path / "ev" / "flaky_agent.py").write_text(FLAKY_AGENT)
    (tmp_path / "ev" / "cases.jsonl").write_text('{"id": "c1", "input": {"value": 1}}\n')
    text = (tmp_path / "ev" / "eval.yaml").read_text() + "run:\n  retry: {max_attempts: 2, on: [exception]}\n"
    (tmp_path / "ev" / "eval.yaml").write_text(text)
    spec = load_eval(tmp_path / "ev" / "eval.yaml")
    run_dir, stats, traces, results = _run(spec)
    assert traces["c1/py"]["error"] is None and traces["c1/py"]["metrics"]["custom"]["attempts"] == 2
    after = load_artifact(spec, run_dir, "c1", "py")
    text = (fsspec.core.url_to_fs(after.artifacts_path)[0]).cat_file(f"{after.artifacts_path}/after/app.py").decode()
    assert text == "VALUE = 0\n# attempt 2\n"  # attempt 1's edit was discarded
    assert stats.workspace["leaked_bytes"] == 0 and stats.workspace["workspaces"] == 1


def test_gross_cleanup_leak_fails_the_traces_stage(tmp_path, monkeypatch):
    from evalh_pipeline.workspaces import base
    from evalh_pipeline.workspaces.accounting import WorkspaceAccountingError

    spec = _write_eval(tmp_path, "- name: py\n  adapter: python_function\n  target: py_agent:run\n")
    (tmp_path / "ev" / "fixture" / "big.bin").write_bytes(b"\0" * 3_000_000)
    (tmp_path / "ev" / "cases.jsonl").write_text('{"id": "c1", "input": {"value": 1}}\n')
    # A cleanup that silently leaves everything behind, and a tree that cannot be moved out.
    monkeypatch.setattr(base, "remove_tree", lambda path: 0)
    def copy_only(tree, destination):
        shutil.copytree(tree, destination)
        return False

    monkeypatch.setattr(base, "_move_or_copy", copy_only)
    info = prepare_cases(spec, "run-1")
    with pytest.raises(WorkspaceAccountingError, match="leaked"):
        asyncio.run(produce_traces(spec, info.run_dir))
    summary = write_summary(spec, info.run_dir)
    assert summary.workspace["leaked_bytes"] >= 3_000_000 and "leaked" in summary.workspace["mismatch"]
