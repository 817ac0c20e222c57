"""semantic_similarity configs are checked when the eval loads: references, embedders, options."""

from __future__ import annotations

import sys

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from tests.support.evals import write_eval


def load_errors(tmp_path, config: str) -> list[str]:
    evaluators = f"""
  - name: similar
    type: semantic_similarity
    config: {config}
"""
    with pytest.raises(ConfigError) as info:
        load_eval(write_eval(tmp_path / "toy", evaluators=evaluators), env={})
    return [line for line in str(info.value).splitlines() if "evaluators[0].config" in line]


def test_unknown_embedder_lists_the_known_ones(tmp_path):
    (line,) = load_errors(tmp_path, "{reference_text: Paris, threshold: 0.5, embedder: minilm}")
    assert line.startswith("eval.yaml:")
    assert ("evaluators[0].config.embedder: unknown embedder 'minilm' (known: hashing, openai_compatible, sentence_transformers, wordllama"
            in line)


def test_unknown_embedder_option_names_the_allowed_ones(tmp_path):
    (line,) = load_errors(tmp_path, "{reference_text: Paris, threshold: 0.5, embedder: {name: hashing, size: 3}}")
    assert "evaluators[0].config.embedder: embedder 'hashing': size: unknown option (allowed: name, dim," in line


@pytest.mark.parametrize("config", ["{threshold: 0.5}",
                                    "{threshold: 0.5, reference_text: Paris, reference_path: expected.facts.city}"])
def test_exactly_one_of_reference_text_or_reference_path(tmp_path, config):
    (line,) = load_errors(tmp_path, config)
    assert line.endswith("evaluators[0].config: give exactly one of reference_text or reference_path")


def test_threshold_is_required_and_bounded(tmp_path):
    assert load_errors(tmp_path, "{reference_text: Paris}")[0].endswith("config.threshold: required key is missing")
    assert "config.threshold: Input should be less than or equal to 1" in load_errors(
        tmp_path, "{reference_text: Paris, threshold: 2}")[0]


def test_a_valid_config_loads(tmp_path):
    evaluators = """
  - name: similar
    type: semantic_similarity
    config: {reference_path: expected.facts.city, threshold: 0.5, embedder: {name: hashing, dim: 256}}
"""
    spec = load_eval(write_eval(tmp_path / "toy", evaluators=evaluators), env={})
    assert spec.config.evaluators[0].type == "semantic_similarity"


def test_wordllama_without_the_extra_warns_at_load_and_its_results_error_with_the_install_hint(tmp_path, monkeypatch):
    import asyncio

    from evalh_pipeline.models import EvalCase, Trace
    from evalh_pipeline.runner.judging import build_evaluators, judge_trace

    # A None entry in sys.modules is how Python spells "this module cannot be imported".
    monkeypatch.setitem(sys.modules, "wordllama", None)
    evaluators = """
  - name: similar
    type: semantic_similarity
    config: {reference_text: Paris, threshold: 0.5, embedder: wordllama}
"""
    spec = load_eval(write_eval(tmp_path / "toy", evaluators=evaluators), env={})
    hint = ("embedder 'wordllama' is not available: the wordllama package is not installed "
            "(pip install 'evalh-pipeline[embeddings]')")
    (warning,) = spec.warnings
    assert "evaluators[0].config.embedder: " + hint in str(warning)
    (evaluator,) = build_evaluators(spec)
    trace = Trace(run_id="r", case_id="c", variant_name="v", started_at="2026-01-01T00:00:00Z",
                  finished_at="2026-01-01T00:00:00Z", latency_ms=0, output={"final_answer": "Paris"})
    (result,) = asyncio.run(judge_trace([evaluator], EvalCase(id="c"), trace, None))
    assert not result.passed and hint in result.error.message
