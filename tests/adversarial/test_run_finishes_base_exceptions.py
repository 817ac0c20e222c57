"""Item 8: SystemExit, KeyboardInterrupt, CancelledError or any BaseException raised by the
system under test are that cell's errors: the run finishes and exits 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.evalh_process import run_evalh

AGENT = '''
import asyncio, sys

class Custom(BaseException):
    pass

RAISE = {
    "exit": lambda: sys.exit(4),
    "interrupt": lambda: (_ for _ in ()).throw(KeyboardInterrupt()),
    "cancelled": lambda: (_ for _ in ()).throw(asyncio.CancelledError()),
    "custom": lambda: (_ for _ in ()).throw(Custom("mine")),
    "generator_exit": lambda: (_ for _ in ()).throw(GeneratorExit()),
}

def run_sync(case, variant):
    kind = case["input"]["kind"]
    if kind in RAISE:
        RAISE[kind]()
    return {"final_answer": "ok"}

async def run_async(case, variant):
    await asyncio.sleep(0)
    return run_sync(case, variant)
'''

KINDS = ["exit", "interrupt", "cancelled", "custom", "generator_exit", "fine"]


@pytest.mark.e2e
def test_base_exceptions_from_the_system_are_cell_errors(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "raising"
    folder.mkdir()
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": k, "input": {"kind": k}}) + "\n" for k in KINDS))
    (folder / "eval.yaml").write_text(f"""
eval: {{name: raising}}
dataset: {{type: jsonl, path: cases.jsonl}}
systems:
  - {{name: sync, adapter: python_function, target: "agent:run_sync"}}
  - {{name: async, adapter: python_function, target: "agent:run_async"}}
evaluators:
  - {{name: ok, type: contains_text, config: {{any_of: [ok]}}}}
output: [{{type: local_files, path: {folder / "runs"}}}]
""")
    done = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "interrupted" not in done.stderr
    (run_dir,) = [p for p in (folder / "runs").iterdir() if not p.name.startswith(".")]
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    for variant in summary["variants"]:
        assert (variant["cases_total"], variant["cases_errored"], variant["cases_passed"]) == (6, 5, 1), variant
    errors = {(t["variant_name"], t["case_id"]): t["error"] for t in
              map(json.loads, (run_dir / "traces.jsonl").read_text().splitlines())}
    assert errors[("sync", "exit")]["message"].startswith("SystemExit")
    assert errors[("async", "interrupt")]["message"].startswith("KeyboardInterrupt")
    assert errors[("async", "cancelled")]["message"].startswith("CancelledError")
    assert errors[("sync", "custom")]["message"] == "Custom: mine"
    assert errors[("sync", "fine")] is None


@pytest.mark.e2e
def test_a_target_whose_import_exits_fails_its_variant_only(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "import_exit"
    folder.mkdir()
    (folder / "quits.py").write_text("import sys\nsys.exit('no thanks')\n")
    (folder / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'ok'}\n")
    (folder / "cases.jsonl").write_text(json.dumps({"id": "a", "input": {}}) + "\n")
    (folder / "eval.yaml").write_text(f"""
eval: {{name: import_exit}}
dataset: {{type: jsonl, path: cases.jsonl}}
systems:
  - {{name: quits, adapter: python_function, target: "quits:run"}}
  - {{name: works, adapter: python_function, target: "agent:run"}}
evaluators:
  - {{name: ok, type: contains_text, config: {{any_of: [ok]}}}}
output: [{{type: local_files, path: {folder / "runs"}}}]
""")
    done = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)
    # A system that cannot start is reported (and may set the exit code); the run still finishes.
    assert "could not start" in done.stderr and "SystemExit" in done.stderr, done.stdout + done.stderr
    (run_dir,) = [p for p in (folder / "runs").iterdir() if not p.name.startswith(".")]
    summary = {v["name"]: v for v in yaml.safe_load((run_dir / "summary.yaml").read_text())["variants"]}
    assert summary["quits"]["cases_errored"] == 1 and summary["works"]["cases_passed"] == 1
