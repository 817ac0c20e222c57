"""Cost from tokens: the price table, the thinking rule, and the runner computing cost before writing."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.models import RunVariant, TraceMetrics, TraceOutput
from evalh_pipeline.common.pricing import (
    PriceTableError, apply_prices, builtin_price_table, load_price_table, parse_price_table, variant_model,
)
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from evalh_pipeline.systems.base import SystemAdapter, SystemConfigModel, SystemResponse
from evalh_pipeline.systems.registry import SYSTEMS
from tests.support.evals import write_eval

TABLE = {
    "as_of": "2025-01-02",
    "currency": "USD",
    "models": {
        "gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10},
        "gpt-4o-mini": {"input_per_mtok": 0.15, "output_per_mtok": 0.6},
        "reasoner": {"input_per_mtok": 1, "output_per_mtok": 4, "thinking_per_mtok": 2},
        "gem": {"input_per_mtok": 1, "output_per_mtok": 10, "output_includes_thinking": False},
    },
    "aliases": {"four-o": "gpt-4o"},
}


@pytest.fixture
def table():
    return parse_price_table(TABLE)


# --- the table ---------------------------------------------------------------------------

def test_table_parses_from_yaml_with_its_date(tmp_path, table):
    import yaml

    path = tmp_path / "prices.yaml"
    path.write_text(yaml.safe_dump(TABLE))
    loaded = load_price_table(path)
    assert loaded.as_of.isoformat() == "2025-01-02"
    assert loaded.models["gpt-4o"].thinking_rate == 10  # defaults to the output rate
    assert loaded.models["reasoner"].thinking_rate == 2


@pytest.mark.parametrize("bad, fragment", [
    ({**TABLE, "currency": "EUR"}, "currency"),
    ({**TABLE, "as_of": "yesterday"}, "as_of"),
    ({**TABLE, "models": {"m": {"input_per_mtok": -1, "output_per_mtok": 1}}}, "input_per_mtok"),
    ({**TABLE, "models": {"m": {"input_per_mtok": 1}}}, "output_per_mtok"),
    ({**TABLE, "aliases": {"x": "nope"}}, "x -> nope"),
    ({**TABLE, "extra": 1}, "extra"),
    (["not", "a", "mapping"], "invalid price table"),
])
def test_invalid_tables_are_refused_naming_the_problem(bad, fragment):
    with pytest.raises(PriceTableError, match=fragment):
        parse_price_table(bad)


def test_missing_and_unparsable_files_are_refused(tmp_path):
    with pytest.raises(PriceTableError, match="not found"):
        load_price_table(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("models: [unclosed\n")
    with pytest.raises(PriceTableError, match="cannot read"):
        load_price_table(tmp_path / "bad.yaml")


def test_builtin_table_ships_with_the_package():
    table = builtin_price_table()
    assert table.as_of.year >= 2025 and table.currency == "USD"
    for model in ("gpt-4o", "claude-sonnet-4", "gemini-2.5-pro", "deepseek-chat"):
        assert table.lookup(model) is not None, model


@pytest.mark.parametrize("name, expected", [
    ("gpt-4o", "gpt-4o"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),   # longest prefix wins
    ("four-o", "gpt-4o"),                        # alias
    ("four-o-latest", "gpt-4o"),                 # alias as a prefix
    ("openai/gpt-4o-mini", "gpt-4o-mini"),       # provider prefix
    ("gpt-4oxyz", None),                         # a prefix must end at a separator
    ("gpt-4", None),
    ("llama-3", None),
])
def test_lookup_exact_alias_and_longest_prefix(table, name, expected):
    assert table.lookup(name) == (table.models[expected] if expected else None)


# --- apply_prices ------------------------------------------------------------------------

def test_cost_from_input_and_output_tokens(table):
    metrics = apply_prices(TraceMetrics(token_input=1_000_000, token_output=500_000), "gpt-4o-2024-08-06", table)
    assert metrics.cost_usd == pytest.approx(2.5 + 5.0)
    assert metrics.cost_thinking_usd is None
    assert metrics.custom["cost_source"] == "price_table:2025-01-02"


def test_only_output_tokens_still_prices(table):
    assert apply_prices(TraceMetrics(token_output=1_000_000), "gpt-4o", table).cost_usd == pytest.approx(10)


def test_thinking_is_part_of_output_by_default_and_never_double_billed(table):
    # OpenAI/Anthropic style: 400k output of which 300k thinking, thinking at the output rate.
    metrics = apply_prices(TraceMetrics(token_input=0, token_output=400_000, token_thinking=300_000), "gpt-4o", table)
    assert metrics.cost_usd == pytest.approx(4.0)          # 400k * $10, not 700k
    assert metrics.cost_thinking_usd == pytest.approx(3.0)  # a part of cost_usd, not added


def test_distinct_thinking_rate_prices_the_thinking_part_at_that_rate(table):
    metrics = apply_prices(TraceMetrics(token_input=0, token_output=400_000, token_thinking=300_000), "reasoner", table)
    assert metrics.cost_usd == pytest.approx(100_000 * 4 / 1e6 + 300_000 * 2 / 1e6)
    assert metrics.cost_thinking_usd == pytest.approx(0.6)


def test_output_excluding_thinking_bills_thinking_in_addition(table):
    # Gemini style, from the table entry.
    metrics = apply_prices(TraceMetrics(token_input=0, token_output=100_000, token_thinking=300_000), "gem", table)
    assert metrics.cost_usd == pytest.approx(1.0 + 3.0)
    # ... or from the trace itself.
    metrics = TraceMetrics(token_output=100_000, token_thinking=300_000,
                           custom={"token_output_includes_thinking": False})
    assert apply_prices(metrics, "gpt-4o", table).cost_usd == pytest.approx(4.0)


def test_reported_cost_is_never_overwritten(table):
    metrics = apply_prices(TraceMetrics(token_input=10**6, token_output=10**6, cost_usd=0.01), "gpt-4o", table)
    assert metrics.cost_usd == 0.01 and "cost_source" not in metrics.custom


def test_no_tokens_means_no_cost(table):
    metrics = apply_prices(TraceMetrics(token_thinking=100), "gpt-4o", table)
    assert metrics.cost_usd is None and "cost_source" not in metrics.custom


def test_unknown_or_missing_model_leaves_cost_unset_and_says_why(table):
    metrics = apply_prices(TraceMetrics(token_input=10, token_output=5), "llama-3-70b", table)
    assert metrics.cost_usd is None
    assert metrics.custom["cost_source"] == "unknown_model:llama-3-70b"
    assert apply_prices(TraceMetrics(token_input=1), None, table).custom["cost_source"] == "unknown_model:"


def test_model_comes_from_metadata_then_system_config():
    assert variant_model(RunVariant(name="a", adapter="x", metadata={"model": "m1"}, config={"model": "m2"})) == "m1"
    assert variant_model(RunVariant(name="a", adapter="x", config={"model": "m2"})) == "m2"
    assert variant_model(RunVariant(name="a", adapter="x")) is None


# --- through the runner ------------------------------------------------------------------

class TokenConfig(SystemConfigModel):
    token_input: int = 1_000_000
    token_output: int = 1_000_000
    token_thinking: int | None = None
    cost: float | None = None


class TokenSystem(SystemAdapter[TokenConfig]):
    """Reports tokens and (optionally) a cost; never a network call."""

    async def run(self, case, workspace):
        metrics = TraceMetrics(token_input=self.config.token_input, token_output=self.config.token_output,
                               token_thinking=self.config.token_thinking, cost_usd=self.config.cost)
        return SystemResponse(output=TraceOutput(final_answer=f"Paris {case.id}"), metrics=metrics)


@pytest.fixture(autouse=True)
def token_system():
    SYSTEMS.register("tokens", TokenSystem)
    yield TokenSystem
    SYSTEMS.unregister("tokens")  # keep "known adapters" messages of other tests exact


def _run(tmp_path, system_yaml, *, cases=3, extra_yaml="", run_yaml=None):
    path = write_eval(tmp_path / "toy", cases=cases, systems=system_yaml, extra_yaml=extra_yaml)
    if run_yaml is not None:
        path.write_text(path.read_text().replace("run:\n  max_concurrency: 4\n", "run:\n" + run_yaml))
    spec = load_eval(path)
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    traces = [json.loads(line) for line in info.run_dir.traces.read_text().splitlines()]
    return {f"{t['case_id']}/{t['variant_name']}": t for t in traces}


SYSTEMS_YAML = """
  - name: base
    adapter: tokens
    metadata: {model: gpt-4o-2024-08-06}
  - name: candidate
    adapter: tokens
    cost: 0.25
    metadata: {model: gpt-4o}
"""


def _write_table(folder, table=TABLE):
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "my_prices.yaml").write_text(yaml.safe_dump(table))


def test_cost_is_computed_before_the_trace_is_written(tmp_path, caplog):
    _write_table(tmp_path / "toy")
    with caplog.at_level(logging.WARNING, logger="evalh_pipeline"):
        traces = _run(tmp_path, SYSTEMS_YAML, extra_yaml="metrics:\n  price_table_path: my_prices.yaml\n")
    base = traces["case_0/base"]["metrics"]
    assert base["cost_usd"] == pytest.approx(2.5 + 10)
    assert base["custom"]["cost_source"] == "price_table:2025-01-02"
    candidate = traces["case_0/candidate"]["metrics"]
    assert candidate["cost_usd"] == 0.25 and "cost_source" not in candidate["custom"]
    assert not [r for r in caplog.records if "built-in price table" in r.getMessage()]


def test_builtin_table_is_the_default_and_warns_once_per_run(tmp_path, caplog):
    builtin = builtin_price_table()
    with caplog.at_level(logging.WARNING, logger="evalh_pipeline"):
        traces = _run(tmp_path, SYSTEMS_YAML, cases=4)
    base = traces["case_0/base"]["metrics"]
    price = builtin.lookup("gpt-4o")
    assert base["cost_usd"] == pytest.approx(price.input_per_mtok + price.output_per_mtok)
    assert base["custom"]["cost_source"] == f"price_table:{builtin.as_of.isoformat()}"
    warnings = [r.getMessage() for r in caplog.records if "built-in price table" in r.getMessage()]
    assert len(warnings) == 1
    assert builtin.as_of.isoformat() in warnings[0] and "metrics.price_table_path" in warnings[0]


def test_no_warning_when_every_system_reports_its_cost(tmp_path, caplog):
    system = "\n  - name: base\n    adapter: tokens\n    cost: 0.1\n    metadata: {model: gpt-4o}\n"
    with caplog.at_level(logging.WARNING, logger="evalh_pipeline"):
        _run(tmp_path, system)
    assert not [r for r in caplog.records if "built-in price table" in r.getMessage()]


def test_unknown_model_is_recorded_in_the_trace(tmp_path):
    system = "\n  - name: base\n    adapter: tokens\n    metadata: {model: my-private-model}\n"
    traces = _run(tmp_path, system, cases=1)
    metrics = traces["case_0/base"]["metrics"]
    assert metrics["cost_usd"] is None
    assert metrics["custom"]["cost_source"] == "unknown_model:my-private-model"


def test_cost_limit_triggers_from_computed_costs(tmp_path):
    # Each cell: 1M in + 1M out of gpt-4o = $12.50 computed; the limit is $20.
    _write_table(tmp_path / "toy")
    system = "\n  - name: base\n    adapter: tokens\n    metadata: {model: gpt-4o}\n"
    traces = _run(tmp_path, system, cases=5, extra_yaml="metrics:\n  price_table_path: my_prices.yaml\n",
                  run_yaml="  max_concurrency: 1\n  cost_limit_usd: 20.0\n")
    errors = [t["error"]["type"] if t["error"] else None for t in traces.values()]
    assert errors.count(None) == 2 and errors.count("cost_limit") == 3


def test_an_eval_harness_price_table_keeps_its_meaning(tmp_path):
    from evalh_pipeline.models import TraceMetrics
    from evalh_pipeline.common.pricing import apply_prices, load_price_table

    path = tmp_path / "prices.yaml"
    path.write_text("table_version: '2026-05-12'\nfreshness_date: 2026-05-12\nmodels:\n"
                    "  reasoner-1: {input_per_million_tokens: 2.0, output_per_million_tokens: 8.0,"
                    " thinking_per_million_tokens: 4.0}\n"
                    "  plain-1: {input_per_million_tokens: 1.0, output_per_million_tokens: 1.0}\n")
    table = load_price_table(path)
    assert table.as_of.isoformat() == "2026-05-12"
    # eval-harness: in * input + out * output + thinking * thinking rate (thinking on top; default rate 0).
    priced = apply_prices(TraceMetrics(token_input=1000, token_output=1000, token_thinking=1000), "reasoner-1", table)
    assert priced.cost_usd == pytest.approx(0.014)
    plain = apply_prices(TraceMetrics(token_input=1000, token_output=1000, token_thinking=1000), "plain-1", table)
    assert plain.cost_usd == pytest.approx(0.002)
    # Exact names only: a dated name is not priced, as in eval-harness.
    assert apply_prices(TraceMetrics(token_input=10, token_output=10), "reasoner-1-2026-01-01", table).cost_usd is None
