"""`evalh run --dry-run / --limit / --filter` as users run them: real processes, a temp instance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


from tests.support.evalh_process import run_evalh


from tests.support.evals import write_eval

def _only_run(runs: Path) -> Path:
    (run_dir,) = [p for p in runs.iterdir() if not p.name.startswith(".")]
    return run_dir


def _case_ids(run_dir: Path) -> list[str]:
    return [json.loads(line)["id"] for line in (run_dir / "cases.jsonl").read_text().splitlines()]


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=6)
    before = sorted(p.name for p in (tmp_path / "toy").iterdir())

    proc = run_evalh(["run", str(path), "--dry-run", "--filter", "group=even", "--limit", "2"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert "cases: 2" in proc.stdout
    assert "cells: 4 (2 cases × 2 variants × 1 sample)" in proc.stdout
    assert "variants: 2 (base, candidate)" in proc.stdout
    assert "concurrency: 4" in proc.stdout
    assert f"output folder: {tmp_path / 'toy' / 'runs'}" in proc.stdout
    assert sorted(p.name for p in (tmp_path / "toy").iterdir()) == before
    assert not Path(env["EVALH_TEST_CALL_LOG"]).exists()
    assert not any((tmp_path / "dagster_home").glob("*.db")) and not (tmp_path / "dagster_home" / "storage").exists()


def test_dry_run_counts_the_whole_selection_and_never_imports_dagster(tmp_path):
    path = write_eval(tmp_path / "toy", cases=5)
    code = (
        "import sys\nfrom evalh_pipeline.cli import main\n"
        f"sys.argv = ['evalh', 'run', {str(path)!r}, '--dry-run', '--max-concurrency', '7']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('dagster imported:', 'dagster' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "cases: 5" in proc.stdout and "cells: 10" in proc.stdout and "concurrency: 7" in proc.stdout
    assert "dagster imported: False" in proc.stdout


def test_dry_run_with_a_bad_dataset_row_exits_1_with_file_and_line(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=6)
    with (tmp_path / "toy" / "cases.jsonl").open("a") as f:
        f.write('{"id": "case_0", "input": {}}\n')

    # Even with --limit 1 every row is read, as a real run reads it.
    proc = run_evalh(["run", str(path), "--dry-run", "--limit", "1"], env, tmp_path)

    assert proc.returncode == 1, proc.stdout
    assert "cases.jsonl:7 id: duplicate case id 'case_0'" in proc.stderr
    assert not (tmp_path / "toy" / "runs").exists()


def test_dry_run_with_a_bad_config_exits_1(tmp_path, env):
    path = write_eval(tmp_path / "toy")
    path.write_text(path.read_text().replace("adapter: python_function", "adapter: htp", 1))
    proc = run_evalh(["run", str(path), "--dry-run"], env, tmp_path)
    assert proc.returncode == 1
    assert "systems[0].adapter: unknown adapter 'htp'" in proc.stderr


def test_limit_runs_exactly_the_first_n_cases(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=6)

    proc = run_evalh(["run", str(path), "--limit", "3"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    run_dir = _only_run(tmp_path / "toy" / "runs")
    assert _case_ids(run_dir) == ["case_0", "case_1", "case_2"]
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert sorted((t["case_id"], t["variant_name"]) for t in traces) == sorted(
        (f"case_{i}", v) for i in range(3) for v in ("base", "candidate"))
    calls = {tuple(json.loads(line))[0] for line in Path(env["EVALH_TEST_CALL_LOG"]).read_text().splitlines()}
    assert calls == {"case_0", "case_1", "case_2"}
    assert "cases_total: 3" in (run_dir / "summary.yaml").read_text()


def test_filters_and_limit_select_cases_and_narrow_the_config_filter(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=8)

    proc = run_evalh(["run", str(path), "--filter", "group=odd", "--filter", "id=case_1", "--filter", "id=case_5",
                 "--filter", "id=case_7"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = _only_run(tmp_path / "toy" / "runs")
    assert _case_ids(first) == ["case_1", "case_5", "case_7"]
    assert "group: odd" in (first / "config.yaml").read_text()  # the snapshot records the selection

    # A CLI filter narrows dataset.filter from eval.yaml (a case must pass both), then --limit applies.
    path.write_text(path.read_text().replace("  path: cases.jsonl", "  path: cases.jsonl\n  filter: {group: [even, odd]}"))
    proc = run_evalh(["run", str(path), "--filter", "group=even", "--limit", "2"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (second,) = [p for p in (tmp_path / "toy" / "runs").iterdir() if not p.name.startswith(".") and p != first]
    assert _case_ids(second) == ["case_0", "case_2"]
    assert len((second / "traces.jsonl").read_text().splitlines()) == 4


def test_filter_without_equals_and_selection_on_resume_exit_1(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=2)
    proc = run_evalh(["run", str(path), "--filter", "group"], env, tmp_path)
    assert proc.returncode == 1 and "expected key=value" in " ".join(proc.stderr.split())
    assert not (tmp_path / "toy" / "runs").exists()
    resume_dir = tmp_path / "elsewhere"
    resume_dir.mkdir()
    proc = run_evalh(["run", str(path), "--resume", str(resume_dir), "--limit", "1"], env, tmp_path)
    assert proc.returncode == 1 and "resumed run keeps the cases" in " ".join(proc.stderr.split())
