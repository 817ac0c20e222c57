"""Item 4: a cli cell that exits non-zero after printing a partial answer is errored, never passed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.evalh_process import run_evalh

CRASHER = """
import sys
print("Paris is the answer")   # a partial answer that satisfies the evaluator...
sys.stdout.flush()
sys.exit(3)                    # ...then the tool crashes
"""


@pytest.mark.e2e
def test_crashing_cli_variant_passes_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "crash"
    folder.mkdir()
    (folder / "crash.py").write_text(CRASHER)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {}}) + "\n" for i in range(3)))
    (folder / "eval.yaml").write_text(f"""
eval: {{name: crash}}
dataset: {{type: jsonl, path: cases.jsonl}}
systems:
  - {{name: crashing, adapter: cli, command: ["{sys.executable}", crash.py]}}
evaluators:
  - {{name: says_paris, type: contains_text, config: {{any_of: [Paris]}}}}
gates: {{pass_rate_floor: 0.5}}
output: [{{type: local_files, path: {folder / "runs"}}}]
""")
    done = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = next(p for p in (folder / "runs").iterdir() if not p.name.startswith("."))
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    (variant,) = summary["variants"]
    assert variant["cases_errored"] == 3
    assert variant["cases_passed"] == 0 and variant["pass_rate"] == 0.0
    assert "gate failed" in done.stdout and "pass_rate_floor" in done.stdout
    # compare and inspect judge the cell the same way.
    shown = run_evalh(["inspect", str(run_dir), "--failed", "--limit", "0"], env, tmp_path)
    assert "3 matching cells" in shown.stdout and "ERROR" in shown.stdout
    compared = run_evalh(["compare", str(run_dir), str(run_dir), "--json"], env, tmp_path)
    assert compared.returncode == 0, compared.stderr
    report = json.loads(compared.stdout)
    (row,) = report["variants"]
    assert row["b"]["cases_passed"] == 0 and row["b"]["cases_errored"] == 3
