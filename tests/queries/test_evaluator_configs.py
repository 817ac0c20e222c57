"""Comparisons across evaluator configs: which evaluators differ, and the regressions only they explain."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from evalh_pipeline.queries.compare import compare_runs
from evalh_pipeline.queries.evaluator_configs import judged_with, rejudge_command
from evalh_pipeline.store.run_dir import RunDirectory

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc).isoformat()


def _run(root, name, answers: dict[str, str], verdicts: dict[tuple[str, str], tuple[bool, str | None]],
         config_path="/evals/toy/eval.yaml") -> RunDirectory:
    """A run of variant ``v``: ``answers`` case -> final answer; ``verdicts`` (case, evaluator) -> (passed, hash)."""
    run_dir = RunDirectory(root / name)
    run_dir.path.mkdir(parents=True)
    (run_dir.path / "run.json").write_text(json.dumps({"run_id": name, "variants": ["v"], "config_path": config_path}))
    (run_dir.path / "config.yaml").write_text("eval: {name: toy}\n")
    with run_dir.traces.open("w") as f:
        for case, answer in answers.items():
            f.write(json.dumps({"schema_version": "1.0", "run_id": name, "case_id": case, "variant_name": "v",
                                "started_at": T0, "finished_at": T0, "latency_ms": 5 if name == "A" else 9,
                                "output": {"final_answer": answer}, "tool_calls": [], "error": None}) + "\n")
    with run_dir.results.open("w") as f:
        for (case, evaluator), (passed, config_hash) in verdicts.items():
            f.write(json.dumps({"schema_version": "1.0", "run_id": name, "case_id": case, "variant_name": "v",
                                "evaluator": evaluator, "evaluator_type": "t", "passed": passed, "reason": "",
                                "started_at": T0, "finished_at": T0, "latency_ms": 0, "error": None,
                                "evaluator_hash": config_hash}) + "\n")
    return run_dir


ANSWERS = {"c1": "Paris", "c2": "Paris", "c3": "Lyon"}


def test_a_regression_with_the_same_answer_and_an_edited_evaluator_is_not_a_system_regression(tmp_path):
    a = _run(tmp_path, "A", ANSWERS, {("c1", "x"): (True, "old"), ("c2", "x"): (True, "old"),
                                      ("c3", "x"): (True, "old"), ("c1", "y"): (True, "same"),
                                      ("c2", "y"): (True, "same"), ("c3", "y"): (True, "same")})
    # In B the system answered c3 differently; x was edited and now fails c1 (same answer) and c3.
    b = _run(tmp_path, "B", {**ANSWERS, "c3": "Marseille"},
             {("c1", "x"): (False, "new"), ("c2", "x"): (True, "new"), ("c3", "x"): (False, "new"),
              ("c1", "y"): (True, "same"), ("c2", "y"): (True, "same"), ("c3", "y"): (True, "same")})

    report = compare_runs(a, b)

    assert [(c.evaluator, c.hash_a, c.hash_b) for c in report.evaluator_changes] == [("x", "old", "new")]
    assert report.comparison.deltas[0].regressions == ["c1", "c3"]
    assert report.evaluator_only_regressions == {"v": ["c1"]}  # c3's answer changed: the system's
    assert report.system_regressions_count == 1 and report.has_regressions
    assert report.to_dict()["evaluator_only_regressions"] == {"v": ["c1"]}  # in drift.yaml and --json


def test_only_evaluator_config_regressions_do_not_fail_the_regression_gate(tmp_path):
    a = _run(tmp_path, "A", ANSWERS, {(c, "x"): (True, "old") for c in ANSWERS})
    b = _run(tmp_path, "B", ANSWERS, {(c, "x"): (c == "c2", "new") for c in ANSWERS})

    report = compare_runs(a, b)

    assert report.comparison.regressions_count == 2 and report.evaluator_only_regressions == {"v": ["c1", "c3"]}
    assert report.system_regressions_count == 0 and not report.has_regressions
    assert not report.has_significant_regression(0.99)  # nothing of the system's to test


def test_a_flip_of_an_unchanged_evaluator_stays_a_regression(tmp_path):
    # x's config changed but did not move c1; y (unchanged, e.g. a sampling judge) did.
    a = _run(tmp_path, "A", ANSWERS, {("c1", "x"): (True, "old"), ("c1", "y"): (True, "same")})
    b = _run(tmp_path, "B", ANSWERS, {("c1", "x"): (True, "new"), ("c1", "y"): (False, "same")})

    report = compare_runs(a, b)

    assert [c.evaluator for c in report.evaluator_changes] == ["x"]
    assert report.evaluator_only_regressions == {} and report.system_regressions_count == 1


def test_same_configs_and_results_without_hashes_report_no_difference(tmp_path):
    a = _run(tmp_path, "A", ANSWERS, {(c, "x"): (True, "h") for c in ANSWERS})
    b = _run(tmp_path, "B", ANSWERS, {(c, "x"): (c != "c1", "h") for c in ANSWERS})
    old = _run(tmp_path, "old", ANSWERS, {(c, "x"): (True, None) for c in ANSWERS})

    assert compare_runs(a, b).evaluator_changes == [] and compare_runs(a, b).system_regressions_count == 1
    assert judged_with(old) == {}  # an old run's results carry no hash: nothing can be said
    assert compare_runs(old, b).evaluator_changes == []


def test_the_rejudge_command_names_the_baseline_and_the_current_eval_file_when_it_differs(tmp_path):
    a = _run(tmp_path, "A", ANSWERS, {}, config_path="/evals/toy/eval.yaml")
    b = _run(tmp_path, "B", ANSWERS, {}, config_path="/evals/toy/eval.yaml")
    moved = _run(tmp_path, "C", ANSWERS, {}, config_path="/evals/toy v2/eval.yaml")

    assert rejudge_command(a, b) == f"evalh re-evaluate {a.path}"
    assert rejudge_command(a, b, "runs/A") == "evalh re-evaluate runs/A"
    assert rejudge_command(a, moved) == f"evalh re-evaluate {a.path} --config '/evals/toy v2/eval.yaml'"
