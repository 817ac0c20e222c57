"""Issue 33 item 3: one way to judge a trace (runner/evaluation.py ``evaluate_traces``).

The traces stage judges nothing; the results stage of ``evalh run``, ``re-evaluate`` and
``retry-failed`` judge exactly the (trace, evaluator) pairs without a current result, in one
way. What it writes is pinned by a golden file made with the code before this change (inline
judging, adoption, worker processes): the same bytes but for run ids, timestamps, latencies
and the hashes that cover them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fake_judge_server import FakeJudgeServer
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.records import TRACES
from evalh_pipeline.store.run_dir import RunDirectory, new_run_id
from tests.support.evalh_process import EVALH, run_evalh
from tests.support.evals import write_eval
from tests.support.killed_run import kill_evalh_when

GOLDEN = Path(__file__).parent / "golden" / "one_path_results.jsonl"

DETERMINISTIC = """
  - name: mentions_paris
    type: contains_text
  - name: used_lookup
    type: tool_called
    config: {tool_name: lookup}
  - name: shape
    type: regex_match
    config: {pattern: "answer \\\\d+"}
"""


def _with_judge(url: str) -> str:
    return DETERMINISTIC + f"""
  - name: quality
    type: llm_judge
    config:
      backend: openai_compatible
      model: judge-1
      base_url: {url}
      nl_assertions: ['The answer mentions "Paris"']
"""


def _eval(folder: Path, evaluators: str, cases: int = 4) -> Path:
    """The toy eval with ``cases`` cases, of which case_2's candidate raises (an errored cell)."""
    path = write_eval(folder, cases=cases, evaluators=evaluators)
    lines = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    lines[2]["input"]["explode"] = ["candidate"]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lines))
    return path


def comparable(run_dir: RunDirectory) -> list[bytes]:
    """results.jsonl without what differs between two runs of the same cells: the run id,
    timestamps and latencies, each trace_hash named by its cell, the judge's config hash (it
    covers the fake server's port); sorted, as cells finish in any order."""
    cells = {}
    for line in run_dir.traces.read_bytes().splitlines(keepends=True):
        trace = json.loads(line)
        cells[TRACES.content_hash(line)] = f"{trace['case_id']}/{trace['variant_name']}/{trace['sample']}"
    data = run_dir.results.read_bytes()
    data = re.sub(rb'"(started_at|finished_at)":"[^"]*"', rb'"\1":"T"', data)
    data = re.sub(rb'"latency_ms":\d+', rb'"latency_ms":0', data)
    data = re.sub(rb'"run_id":"[^"]*"', rb'"run_id":"R"', data)
    data = re.sub(rb'("evaluator":"quality".*"evaluator_hash":)"[0-9a-f]+"', rb'\1"Q"', data)
    data = re.sub(rb'"trace_hash":"([0-9a-f]+)"',
                  lambda m: b'"trace_hash":"' + cells[m.group(1).decode()].encode() + b'"', data)
    return sorted(data.splitlines(keepends=True))


def _judged(tmp_path: Path, url: str) -> RunDirectory:
    spec = load_eval(_eval(tmp_path / "toy", _with_judge(url)), env={})
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    return run_dir


def test_results_are_the_bytes_the_code_before_one_path_wrote(tmp_path):
    with FakeJudgeServer() as server:
        run_dir = _judged(tmp_path, server.openai_base_url)
    found = comparable(run_dir)
    if os.environ.get("EVALH_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_bytes(b"".join(found))
    assert found == GOLDEN.read_bytes().splitlines(keepends=True)
    assert any(b'"case_id":"case_2","variant_name":"candidate"' in line for line in found)  # the errored cell is judged


def test_changing_one_evaluators_config_rejudges_only_that_evaluator(tmp_path):
    with FakeJudgeServer() as server:
        run_dir = _judged(tmp_path, server.openai_base_url)
        before = {p.name for p in run_dir.results_store.glob("*.jsonl")}
        calls = server.calls
        edited = _with_judge(server.openai_base_url).replace('pattern: "answer \\\\d+"', 'pattern: "Paris"')
        spec = load_eval(_eval(tmp_path / "toy", edited), env={})
        stats = asyncio.run(evaluate_traces(spec, run_dir))
        assert server.calls == calls  # the judge's results are current: not one call
    assert stats.evaluators_rejudged == ["shape"] and stats.results == 8 and stats.results_kept == 24
    after = {p.name for p in run_dir.results_store.glob("*.jsonl")}
    # Every other evaluator's file is the same file; only shape's is new.
    assert before - after == {n for n in before if n.startswith("shape-")}
    assert len(after - before) == 1 and next(iter(after - before)).startswith("shape-")
    shape = [json.loads(line) for line in run_dir.results.read_text().splitlines() if '"evaluator":"shape"' in line]
    assert len(shape) == 8 and all("/Paris/" in r["reason"] for r in shape)  # judged with the new pattern


@dataclass(frozen=True)
class _Shard:
    """A part of the traces file by line position, as runner/shards.py's ``Shard`` cuts it."""

    index: int
    count: int

    @property
    def whole(self) -> bool:
        return self.count == 1

    def holds(self, position: int) -> bool:
        return position % self.count == self.index


def test_shards_judge_their_lines_and_keep_the_others_results(tmp_path):
    spec = load_eval(_eval(tmp_path / "toy", DETERMINISTIC, cases=6))
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    positions = {TRACES.content_hash(line): n for n, line in enumerate(run_dir.traces.read_bytes().splitlines())}

    first = asyncio.run(evaluate_traces(spec, run_dir, shard=_Shard(0, 2)))
    results = [json.loads(line) for line in run_dir.results.read_text().splitlines()]
    assert first.traces == 6 and {positions[r["trace_hash"]] % 2 for r in results} == {0}
    second = asyncio.run(evaluate_traces(spec, run_dir, shard=_Shard(1, 2)))
    assert second.traces == 6 and second.results_kept == 18  # the first shard's results, kept
    sharded = comparable(run_dir)
    # Nothing is left to judge, and the shards wrote what one pass over every line writes.
    assert asyncio.run(evaluate_traces(spec, run_dir)).results == 0
    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    assert comparable(run_dir) == sharded


@pytest.mark.integration
def test_a_kill_9_in_the_results_stage_then_resume_judges_every_trace_once(tmp_path, env):
    """kill -9 of `evalh run` while its results stage waits on a judge: every trace is
    durable and no result was written; `--resume` judges each (trace, evaluator) pair once,
    and the results are the bytes `re-evaluate --all` writes (timestamps and latencies aside)."""
    with FakeJudgeServer(hang_seconds=300) as server:
        path = _eval(tmp_path / "toy", _with_judge(server.openai_base_url), cases=6)
        server.script("hang")  # the first judge call never answers: the run is held in its results stage
        runs = tmp_path / "toy" / "runs"
        kill_evalh_when([*EVALH, "run", str(path)], env, tmp_path, tmp_path / "killed.log",
                        lambda: server.calls >= 1, what="the first judge call")
        (folder,) = [p for p in runs.iterdir() if not p.name.startswith(".")]
        run_dir = RunDirectory(folder)
        assert run_dir.traces.read_bytes().count(b"\n") == 12 and not run_dir.results.exists()

        resumed = run_evalh(["run", str(path), "--resume", str(folder)], env, tmp_path, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        results = [json.loads(line) for line in run_dir.results.read_text().splitlines()]
        judged = [(r["case_id"], r["variant_name"], r["sample"], r["evaluator"]) for r in results]
        assert len(judged) == len(set(judged)) == 12 * 4
        hashes = {TRACES.content_hash(line) for line in run_dir.traces.read_bytes().splitlines()}
        assert {r["trace_hash"] for r in results} == hashes
        once = comparable(run_dir)

        again = run_evalh(["re-evaluate", str(folder), "--all"], env, tmp_path, timeout=300)
        assert again.returncode == 0, again.stderr
        assert comparable(run_dir) == once
