"""eval-harness 2.0.2 rules that evalh keeps, each checked on its own.

The sampling rule is eval-harness's own expression (``random.Random(run_id).sample(cases,
k)``, runner/plan_builder.py); the others are the behaviours its docs and tests describe.
"""

from __future__ import annotations

import asyncio
import json
import random
import textwrap
from datetime import datetime, timezone

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.config.dataset import iter_dataset, sample_positions, select_cases
from evalh_pipeline.common.fields import FieldPath
from evalh_pipeline.models import EvalCase, ToolCall, Trace
from evalh_pipeline.runner.judging import build_evaluators, judge_trace
from evalh_pipeline.systems.base import AdapterError, SystemContext
from evalh_pipeline.systems.replay import ReplaySystem
from evalh_pipeline.models import RunVariant
from tests.support.evals import write_eval

NOW = datetime(2026, 5, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize("seed", ["2026-05-01T10-00-00_listing", "x", "2026-11-23T00-15-10-123456_demo"])
@pytest.mark.parametrize(("count", "k"), [(10, 3), (100, 7), (5, 5), (3, 10), (1000, 1)])
def test_dataset_sample_picks_the_cases_eval_harness_picks_for_the_same_seed(seed, count, k):
    cases = [f"case_{i}" for i in range(count)]
    theirs = set(cases) if k >= count else set(random.Random(seed).sample(cases, k))
    chosen = sample_positions(count, k, seed)
    ours = set(cases) if chosen is None else {cases[i] for i in chosen}
    assert ours == theirs


def test_dataset_seed_fixes_the_subset_across_runs_and_keeps_dataset_order(tmp_path):
    path = write_eval(tmp_path / "toy", cases=20)
    path.write_text(path.read_text().replace("  path: cases.jsonl\n", "  path: cases.jsonl\n  sample: 5\n  seed: 7\n"))
    spec = load_eval(path)
    first = [c.id for c in select_cases(spec, "run-a")]
    assert first == [c.id for c in select_cases(spec, "run-b")]
    expected = sorted(random.Random(7).sample(range(20), 5))
    assert first == [f"case_{i}" for i in expected]


def test_yes_no_on_off_are_booleans_in_a_yaml_dataset_only(tmp_path):
    (tmp_path / "cases.yaml").write_text(textwrap.dedent("""\
        schema_version: "1.0"
        cases:
          - {id: a, input: {x: yes, y: off, z: "yes", w: True}}
    """))
    (case,) = iter_dataset(tmp_path / "cases.yaml", "yaml")
    assert case.input == {"x": True, "y": False, "z": "yes", "w": True}
    # eval.yaml keeps YAML 1.2 booleans: `on` in retry.on stays text.
    path = write_eval(tmp_path / "toy")
    path.write_text(path.read_text().replace("run:\n", "run:\n  retry: {max_attempts: 2, on: [timeout]}\n"))
    assert load_eval(path).config.run.retry.on == ["timeout"]


def test_merge_keys_share_settings_and_the_explicit_key_wins(tmp_path):
    path = write_eval(tmp_path / "toy", systems="""
  - &base
    name: base
    adapter: python_function
    target: stub_agent:run
    timeout_seconds: 30
  - <<: *base
    name: candidate
    timeout_seconds: 5
""")
    spec = load_eval(path)
    assert [(v.name, v.timeout_seconds, v.config["target"]) for v in spec.variants] == [
        ("base", 30, "stub_agent:run"), ("candidate", 5, "stub_agent:run")]


def test_a_merge_key_of_a_scalar_is_a_load_error_with_its_line(tmp_path):
    path = write_eval(tmp_path / "toy")
    path.write_text(path.read_text().replace("eval:\n", "eval:\n  <<: 3\n", 1))
    with pytest.raises(ConfigError, match=r"eval\.yaml:\d+: invalid YAML: expected a mapping or list of mappings"):
        load_eval(path)


def _trace(**kwargs) -> Trace:
    return Trace(run_id="r", case_id="c", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=1, **kwargs)


def test_field_paths_are_jsonpath_wildcards_descendants_and_filters_read_something():
    trace = _trace(tool_calls=[ToolCall(name="search", arguments={"q": "a"}),
                               ToolCall(name="delete_listing", arguments={"id": 7})])
    assert FieldPath("tool_calls[*].name").get(trace) == "search"  # the first match, as eval-harness
    assert FieldPath("$..arguments.id").get(trace) == 7
    assert FieldPath("tool_calls[?(@.name == 'delete_listing')].arguments.id").get(trace) == 7
    assert FieldPath("tool_calls[-1].name").get(trace) == "delete_listing"
    assert not FieldPath("tool_calls[?(@.name == 'nope')]").exists(trace)


def test_an_unparsable_field_path_is_a_load_error_with_file_line_and_key(tmp_path):
    evaluators = "\n  - name: forbidden\n    type: contains_text\n    config: {field: 'tool_calls[?(@.name ==', none_of: [x]}\n"
    with pytest.raises(ConfigError) as info:
        load_eval(write_eval(tmp_path / "toy", evaluators=evaluators))
    assert "evaluators[0].config.field" in str(info.value) and "eval.yaml:" in str(info.value)
    assert "not a dotted path or JSONPath" in str(info.value)


def test_none_of_on_a_filter_path_sees_the_forbidden_call(tmp_path):
    evaluators = ("\n  - name: never deletes\n    type: contains_text\n"
                  "    config: {field: \"tool_calls[?(@.name == 'delete_listing')].name\", none_of: [delete]}\n")
    (evaluator,) = build_evaluators(load_eval(write_eval(tmp_path / "toy", evaluators=evaluators)))
    clean = _trace(tool_calls=[ToolCall(name="search", arguments={})])
    dirty = _trace(tool_calls=[ToolCall(name="search", arguments={}), ToolCall(name="delete_listing", arguments={})])
    assert asyncio.run(judge_trace([evaluator], EvalCase(id="c"), clean))[0].passed
    assert not asyncio.run(judge_trace([evaluator], EvalCase(id="c"), dirty))[0].passed


def test_a_fixture_dataset_with_embed_full_trace_needs_every_case_to_carry_one(tmp_path):
    (tmp_path / "traces.yaml").write_text(textwrap.dedent("""\
        schema_version: "1.0"
        cases:
          - {id: a, input: {q: 1}, embedded_trace: {latency_ms: 5, output: {final_answer: hi}}}
          - {id: b, input: {q: 2}}
    """))
    with pytest.raises(ConfigError) as info:
        list(iter_dataset(tmp_path / "traces.yaml", "fixture", embed_full_trace=True))
    assert str(info.value).startswith("traces.yaml:4 cases[1].embedded_trace: missing")
    assert [c.id for c in iter_dataset(tmp_path / "traces.yaml", "fixture")] == ["a", "b"]


def test_replay_returns_the_recorded_trace_with_its_timing_and_provenance(tmp_path):
    recorded = {"started_at": "2026-05-01T10:00:00Z", "finished_at": "2026-05-01T10:00:02.5Z", "latency_ms": 2500,
                "output": {"final_answer": "Richmond"}, "tool_calls": [{"name": "lookup", "arguments": {"id": 1}}],
                "metrics": {"token_input": 10, "cost_usd": 0.002}, "extra": {"trace_id": "lf_1", "source_platform": "langfuse"}}
    system = ReplaySystem(RunVariant(name="prod", adapter="replay", config={}), SystemContext(eval_dir=tmp_path))
    response = asyncio.run(system.run(EvalCase(id="a", embedded_trace=recorded), None))
    assert response.latency_ms == 2500 and response.output.final_answer == "Richmond"
    assert response.metrics.cost_usd == 0.002 and response.tool_calls[0].name == "lookup"
    assert response.extra["source"] == "replay"
    assert response.extra["replayed_from"]["platform"] == "langfuse"
    assert response.extra["replayed_from"]["trace_id"] == "lf_1"
    with pytest.raises(AdapterError, match="has no embedded_trace"):
        asyncio.run(system.run(EvalCase(id="b"), None))
    with pytest.raises(AdapterError, match=r"embedded_trace\.latency_ms"):
        asyncio.run(system.run(EvalCase(id="c", embedded_trace={"latency_ms": "slow"}), None))


def test_the_http_default_body_merges_the_case_input_over_body(tmp_path):
    from evalh_pipeline.systems.http import HttpSystem

    variant = RunVariant(name="v", adapter="http", config={"endpoint": "https://agent.example.com/chat",
                                                            "body": {"mode": "eval", "q": "default"},
                                                            "response_mapping": {"final_answer": "$.answer"}})
    system = HttpSystem(variant, SystemContext(eval_dir=tmp_path))
    system._preset = None
    body = system.build_body(EvalCase(id="c", input={"q": "Where?", "n": 2}))
    assert json.dumps(body, sort_keys=True) == json.dumps({"mode": "eval", "n": 2, "q": "Where?"}, sort_keys=True)
