"""semantic_similarity configs are checked when the eval loads: references, embedders, options."""

from __future__ import annotations

import sys

import pytest

from evalh_pipeline.config import ConfigError, load_eval
from tests.conftest import write_eval


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
    assert ("evaluators[0].config.embedder: unknown embedder 'minilm' (known: hashing, openai_compatible, wordllama"
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


def test_wordllama_without_the_extra_is_a_load_error_with_the_install_hint(tmp_path, monkeypatch):
    # A None entry in sys.modules is how Python spells "this module cannot be imported".
    monkeypatch.setitem(sys.modules, "wordllama", None)
    (line,) = load_errors(tmp_path, "{reference_text: Paris, threshold: 0.5, embedder: wordllama}")
    assert line.endswith("evaluators[0].config.embedder: embedder 'wordllama' is not available: the wordllama "
                         "package is not installed (pip install 'evalh-pipeline[embeddings]')")
