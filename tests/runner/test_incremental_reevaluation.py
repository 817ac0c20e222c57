"""Re-evaluation judges only what changed: evaluators whose config hash changed, traces
with no current result; every other result line is kept byte for byte."""

from __future__ import annotations

import asyncio
import json
import os


from evalh_pipeline.runner.evaluation import evaluate_traces
from tests.support.in_process import FIVE_EVALUATORS, run_in_process, toy_spec

def _lines(run_dir):
    return run_dir.results.read_bytes().splitlines()


def _by_evaluator(lines):
    out = {}
    for line in lines:
        out.setdefault(json.loads(line)["evaluator"], []).append(line)
    return out


def test_every_result_records_its_evaluator_hash_and_every_trace_its_cell_hashes(tmp_path):
    run_dir = run_in_process(toy_spec(tmp_path))
    results = [json.loads(line) for line in _lines(run_dir)]
    hashes = {r["evaluator"]: r["evaluator_hash"] for r in results}
    assert len(hashes) == 5 and len(set(hashes.values())) == 5 and all(len(h) == 16 for h in hashes.values())
    traces = [json.loads(line) for line in run_dir.traces.read_text().splitlines()]
    assert all(t["case_hash"] and t["variant_hash"] and t["fixture_hash"] for t in traces)
    assert len({t["case_hash"] for t in traces}) == 6  # one per case, the same for both variants
    assert len({t["variant_hash"] for t in traces}) == 2


def test_an_unchanged_config_rejudges_nothing_and_leaves_the_file_untouched(tmp_path):
    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    before = run_dir.results.read_bytes()
    stat = os.stat(run_dir.results)
    stats = asyncio.run(evaluate_traces(spec, run_dir))
    assert stats.results == 0 and stats.results_kept == 6 * 2 * 5 and stats.evaluators_rejudged == []
    assert run_dir.results.read_bytes() == before and os.stat(run_dir.results).st_mtime_ns == stat.st_mtime_ns


def test_changing_one_evaluator_rejudges_exactly_its_results(tmp_path):
    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    before = _by_evaluator(_lines(run_dir))
    changed = toy_spec(tmp_path, FIVE_EVALUATORS.replace("pattern: \"answer\"", "pattern: \"Paris\""))
    stats = asyncio.run(evaluate_traces(changed, run_dir))
    assert stats.evaluators_rejudged == ["says_answer"]
    assert stats.results == 12 and stats.results_kept == 48
    after = _by_evaluator(_lines(run_dir))
    for name in before:
        if name == "says_answer":
            assert all(a != b for a, b in zip(sorted(after[name]), sorted(before[name])))
        else:
            assert after[name] == before[name]  # byte for byte, in order
    # And again: now nothing changed.
    again = asyncio.run(evaluate_traces(changed, run_dir))
    assert again.results == 0 and again.results_kept == 60


def test_a_removed_evaluator_loses_its_results_and_a_new_one_is_judged(tmp_path):
    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    without_fast = FIVE_EVALUATORS.replace("  - name: fast\n    type: latency_under\n    config: {max_ms: 60000}\n", "")
    stats = asyncio.run(evaluate_traces(toy_spec(tmp_path, without_fast + "  - name: exact\n    type: exact_match\n"
                                                        "    config: {expected: x}\n"), run_dir))
    assert stats.evaluators_rejudged == ["exact"] and stats.results == 12
    assert set(_by_evaluator(_lines(run_dir))) == {"mentions_paris", "used_lookup", "says_answer", "case_sensitive_paris", "exact"}


def test_traces_appended_since_are_judged_by_the_unchanged_evaluators_only(tmp_path):
    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    before = _lines(run_dir)
    # A resumed run: a cell's trace is appended after judging (here: one copied line with a new case id).
    line = json.loads(run_dir.traces.read_text().splitlines()[0])
    line["case_id"] = "case_0"
    line["sample"] = 1
    with run_dir.traces.open("a") as f:
        f.write(json.dumps(line) + "\n")
    stats = asyncio.run(evaluate_traces(spec, run_dir))
    assert stats.evaluators_rejudged == [] and stats.traces_appended == 1 and stats.results == 5
    after = _lines(run_dir)
    assert set(before) <= set(after) and len(after) == len(before) + 5  # every old line kept byte for byte


def test_results_of_a_run_from_before_the_store_are_kept_where_they_carry_matching_hashes(tmp_path):
    import shutil

    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    shutil.rmtree(run_dir.results_store)  # results.jsonl only, as an older version left it
    stats = asyncio.run(evaluate_traces(spec, run_dir))
    assert stats.results == 0 and stats.results_kept == 60
    # Lines without a trace_hash (eval-harness, or written before it existed) prove nothing: judged again.
    lines = [json.loads(line) for line in _lines(run_dir)]
    shutil.rmtree(run_dir.results_store)
    run_dir.results.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "trace_hash"}) + "\n"
                                       for r in lines))
    stats = asyncio.run(evaluate_traces(spec, run_dir))
    assert stats.results == 60 and stats.results_kept == 0


def test_an_evaluator_judged_on_trace_projections_gives_the_verdicts_of_a_full_judging(tmp_path):
    # latency_under declares the one trace field it reads: re-judged alone, it decodes only that.
    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    strict = toy_spec(tmp_path, FIVE_EVALUATORS.replace("max_ms: 60000", "max_ms: 1"))
    assert asyncio.run(evaluate_traces(strict, run_dir)).evaluators_rejudged == ["fast"]
    incremental = _by_evaluator(_lines(run_dir))
    asyncio.run(evaluate_traces(strict, run_dir, incremental=False))
    full = _by_evaluator(_lines(run_dir))

    def verdicts(lines):
        keep = ("case_id", "variant_name", "sample", "passed", "score", "reason", "detail", "evaluator_hash")
        return sorted(tuple(json.dumps(json.loads(line)[k]) for k in keep) for line in lines)

    assert len(incremental["fast"]) == 12 and verdicts(incremental["fast"]) == verdicts(full["fast"])


def test_rejudging_a_changed_evaluator_never_reads_the_others_results(tmp_path, monkeypatch):
    from evalh_pipeline.runner import evaluation

    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    before = _by_evaluator(_lines(run_dir))
    reads = []
    original = evaluation.entry_lines
    monkeypatch.setattr(evaluation, "entry_lines", lambda *a: reads.append(a[1].file) or original(*a))
    changed = toy_spec(tmp_path, FIVE_EVALUATORS.replace("pattern: \"answer\"", "pattern: \"Paris\""))
    stats = asyncio.run(evaluate_traces(changed, run_dir))
    assert stats.evaluators_rejudged == ["says_answer"] and stats.results == 12 and stats.results_kept == 48
    assert reads == []  # the other four evaluators' files were not opened
    after = _by_evaluator(_lines(run_dir))
    assert all(after[name] == before[name] for name in before if name != "says_answer")
    # Re-judging one variant keeps the other variant's lines.
    again = asyncio.run(evaluate_traces(toy_spec(tmp_path), run_dir, ["base"]))
    assert again.evaluators_rejudged == ["says_answer"] and again.results == 6
    assert _by_evaluator(_lines(run_dir))["fast"] == before["fast"]
    assert len(_by_evaluator(_lines(run_dir))["says_answer"]) == 12


def test_a_re_evaluation_with_nothing_changed_reads_no_trace_line_and_no_result_line(tmp_path, monkeypatch):
    from evalh_pipeline.runner import evaluation
    from evalh_pipeline.store import results_store
    from evalh_pipeline.store.records import TRACES

    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    reads = []

    def counted(module, name):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, **k: reads.append(name) or original(*a, **k))

    for module in (evaluation, results_store):
        counted(module, "iter_raw_lines")
    counted(TRACES, "content_hash")
    counted(TRACES, "decode")
    stats = asyncio.run(evaluate_traces(spec, run_dir))
    # The traces file's bytes are hashed as one block stream (store/jsonl.py
    # complete_lines_digest) to know they are the ones judged; no line is read, parsed or hashed.
    assert reads == [] and stats.results == 0 and stats.results_kept == 60


def test_a_run_folder_copied_elsewhere_is_judged_by_content_not_by_its_files_identity(tmp_path):
    import shutil

    from evalh_pipeline.store.run_dir import RunDirectory

    spec = toy_spec(tmp_path)
    run_dir = run_in_process(spec)
    copy = RunDirectory(tmp_path / "synced" / run_dir.run_id)
    shutil.copytree(run_dir.path, copy.path)  # new inodes, times: nothing judged again
    assert asyncio.run(evaluate_traces(spec, copy)).results == 0
    lines = copy.traces.read_text().splitlines(keepends=True)
    edited = json.loads(lines[2])
    edited["output"]["final_answer"] = "Lyon"  # by hand, its recorded trace_hash left as it was
    lines[2] = json.dumps(edited, separators=(",", ":")) + "\n"
    copy.traces.write_text("".join(lines))
    stats = asyncio.run(evaluate_traces(spec, copy))
    assert stats.results == 5 and stats.results_kept == 55  # that trace, by every evaluator
    verdicts = {r["evaluator"]: r["passed"] for r in map(json.loads, _lines(copy))
                if (r["case_id"], r["variant_name"]) == (edited["case_id"], edited["variant_name"])}
    assert verdicts["mentions_paris"] is False
