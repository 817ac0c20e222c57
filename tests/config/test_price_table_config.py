"""metrics.price_table_path: resolved like any input and validated when the eval loads."""

from __future__ import annotations

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from tests.support.evals import write_eval

GOOD = """\
as_of: 2025-01-02
currency: USD
models:
  gpt-4o: {input_per_mtok: 2.5, output_per_mtok: 10}
"""


def _eval(tmp_path, price_path: str):
    return write_eval(tmp_path / "toy", extra_yaml=f"metrics:\n  price_table_path: {price_path}\n")


def test_no_price_table_means_the_builtin_one(tmp_path):
    spec = load_eval(write_eval(tmp_path / "toy"))
    assert spec.price_table_path is None


def test_relative_path_resolves_against_the_eval_folder(tmp_path, monkeypatch):
    path = _eval(tmp_path, "prices/mine.yaml")
    (path.parent / "prices").mkdir()
    (path.parent / "prices" / "mine.yaml").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    spec = load_eval(path)
    assert spec.price_table_path == (path.parent / "prices" / "mine.yaml").resolve()


def test_missing_file_is_a_config_error_naming_the_key(tmp_path):
    with pytest.raises(ConfigError) as exc:
        load_eval(_eval(tmp_path, "nowhere.yaml"))
    text = str(exc.value)
    assert "metrics.price_table_path" in text and "not found" in text and "nowhere.yaml" in text
    assert "eval.yaml:" in text  # file and line


@pytest.mark.parametrize("content, fragment", [
    ("as_of: 2025-01-02\ncurrency: EUR\nmodels: {m: {input_per_mtok: 1, output_per_mtok: 1}}\n", "currency"),
    ("currency: USD\nmodels: {m: {input_per_mtok: 1, output_per_mtok: 1}}\n", "as_of"),
    ("as_of: 2025-01-02\nmodels: {m: {input_per_mtok: 1}}\n", "output_per_mtok"),
    ("as_of: 2025-01-02\nmodels: [unclosed\n", "cannot read"),
])
def test_invalid_file_is_a_config_error_naming_the_key(tmp_path, content, fragment):
    path = _eval(tmp_path, "prices.yaml")
    (path.parent / "prices.yaml").write_text(content)
    with pytest.raises(ConfigError) as exc:
        load_eval(path)
    issues = [i for i in exc.value.issues if i.key == "metrics.price_table_path"]
    assert len(issues) == 1 and fragment in issues[0].message


def test_unknown_metrics_key_is_still_refused(tmp_path):
    path = write_eval(tmp_path / "toy", extra_yaml="metrics:\n  price_table: x.yaml\n")
    with pytest.raises(ConfigError, match="price_table_path"):
        load_eval(path)
