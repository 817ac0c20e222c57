"""Item 7: one bad output (an unserializable object, a lone surrogate, a non-UTF-8 file name)
errors its own cell; the run goes on, finishes, and ``--resume`` does not trip over it."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from hypothesis import given, strategies as st

from evalh_pipeline.models import Trace
from evalh_pipeline.queries.sql import RESULT_COLUMNS, TRACE_COLUMNS, connect, load_table
from evalh_pipeline.store.recording import MAX_TRACE_BYTES, trace_line
from tests.support.evalh_process import EVALH, run_evalh

AGENT = '''
import os

class Opaque:
    pass

def run(case, variant):
    kind = case["input"]["kind"]
    if kind == "object":
        return {"final_answer": "Paris", "structured": {"value": Opaque()}}
    if kind == "surrogate":
        return {"final_answer": "Paris \\udc80"}
    if kind == "bytes_name":
        os.close(os.open(os.path.join(os.fsencode(variant["_workspace_path"]), b"caf\\xe9.txt"), os.O_CREAT | os.O_WRONLY))
        return {"final_answer": "Paris"}
    return {"final_answer": "Paris"}
'''


def _eval(folder: Path, kinds: list[str], workspace: bool) -> Path:
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"{kind}_{i}", "input": {"kind": kind}}) + "\n" for i, kind in enumerate(kinds)))
    extra = ""
    if workspace:
        (folder / "seed").mkdir()
        (folder / "seed" / "a.txt").write_text("a\n")
        extra = """workspace: {type: tempdir_snapshot, copy_from: ./seed}
evaluators:
  - {name: says_paris, type: contains_text, config: {any_of: [Paris]}}
  - {name: files, type: git_diff, config: {forbidden_modified: [a.txt]}}
"""
    else:
        extra = "evaluators:\n  - {name: says_paris, type: contains_text, config: {any_of: [Paris]}}\n"
    path = folder / "eval.yaml"
    path.write_text(f"""
eval: {{name: {folder.name}}}
dataset: {{type: jsonl, path: cases.jsonl}}
systems:
  - {{name: only, adapter: python_function, target: "agent:run"}}
{extra}output: [{{type: local_files, path: {folder / "runs"}}}]
""")
    return path


def _summary(folder: Path) -> tuple[Path, dict]:
    (run_dir,) = [p for p in (folder / "runs").iterdir() if not p.name.startswith(".")]
    return run_dir, yaml.safe_load((run_dir / "summary.yaml").read_text())


@pytest.mark.e2e
def test_unserializable_outputs_error_their_cell_and_the_run_finishes(tmp_path: Path, env: dict[str, str]) -> None:
    path = _eval(tmp_path / "bad_outputs", ["object", "surrogate", "plain"], workspace=False)
    done = run_evalh(["run", str(path)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir, summary = _summary(path.parent)
    (variant,) = summary["variants"]
    assert (variant["cases_total"], variant["cases_errored"], variant["cases_passed"]) == (3, 2, 1)
    traces = {t["case_id"]: t for t in map(json.loads, (run_dir / "traces.jsonl").read_text().splitlines())}
    assert traces["object_0"]["error"]["type"] == "unserializable_output"
    assert "structured.value" in traces["object_0"]["error"]["message"]
    assert traces["object_0"]["output"]["structured"]["value"].startswith("<unserializable Opaque")
    assert traces["surrogate_1"]["output"]["final_answer"] == "Paris \\udc80"  # the escape, kept as text
    resumed = run_evalh(["run", str(path), "--resume", str(run_dir)], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert run_evalh(["inspect", str(run_dir), "--limit", "0"], env, tmp_path).returncode == 0


@pytest.mark.e2e
def test_a_non_utf8_file_name_in_a_workspace_does_not_stop_the_run(tmp_path: Path, env: dict[str, str]) -> None:
    path = _eval(tmp_path / "bytes_names", ["bytes_name", "plain"], workspace=True)
    done = run_evalh(["run", str(path)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir, summary = _summary(path.parent)
    (variant,) = summary["variants"]
    assert variant["cases_total"] == 2
    # The file name is printed as its own bytes (the terminal's encoding, as ls does).
    shown = subprocess.run([*EVALH, "inspect", str(run_dir), "--limit", "0"], env=env, cwd=tmp_path,
                           capture_output=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert b"caf\xe9.txt" in shown.stdout
    assert run_evalh(["run", str(path), "--resume", str(run_dir)], env, tmp_path).returncode == 0
    assert run_evalh(["re-evaluate", str(run_dir)], env, tmp_path).returncode == 0


class _Odd:
    def __repr__(self) -> str:
        return "odd"


ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=200)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT | st.just(_Odd()) | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT | st.integers(), inner, max_size=4),
    max_leaves=20,
)
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def duck():
    """One DuckDB for every example (a connection costs more than reading one line)."""
    con = connect()
    yield con
    con.close()


@given(answer=ANY_TEXT | st.none(), structured=st.dictionaries(ANY_TEXT, JSONISH, max_size=4) | st.none(),
       extra=st.dictionaries(ANY_TEXT, JSONISH, max_size=3))
def test_any_answer_is_recorded_as_one_readable_line(tmp_path_factory, duck, answer, structured, extra) -> None:
    trace = Trace(run_id="r", case_id="c", variant_name="v", started_at=T0, finished_at=T0, latency_ms=0,
                  output={"final_answer": answer, "structured": structured}, extra=extra)
    raw, recorded = trace_line(trace)
    line = raw.decode("utf-8")  # always valid UTF-8
    assert b"\n" not in raw and len(raw) <= MAX_TRACE_BYTES
    assert Trace.model_validate_json(line).model_dump_json() == line == recorded.model_dump_json()
    if recorded is trace:  # nothing was changed: the answer is recorded exactly
        assert json.loads(line)["output"]["final_answer"] == answer
    else:
        assert recorded.error is not None or recorded.extra.get("truncated")
    # DuckDB, which the summary, compare and drift use, reads it back.
    folder = tmp_path_factory.mktemp("line")
    (folder / "traces.jsonl").write_bytes(raw + b"\n")
    assert load_table(duck, "t", folder / "traces.jsonl", TRACE_COLUMNS, "traces") == 1
    duck.execute("DROP TABLE t")
    assert RESULT_COLUMNS  # the results side is covered by the run above
