"""load_eval: validation errors name file:line and key path, and list what is allowed."""

from __future__ import annotations

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from tests.config.support import BASE, config_error, write

def test_valid_eval_loads_with_variants_and_resolved_dataset(tmp_path):
    spec = load_eval(write(tmp_path, BASE), env={})
    assert spec.name == "demo"
    assert spec.variant_names == ["base"]
    assert spec.variants[0].config["target"] == "agent:run"
    assert spec.dataset_path == (tmp_path / "cases.jsonl").resolve()


def test_unknown_adapter_names_file_line_key_and_known_adapters(tmp_path):
    path = write(tmp_path, BASE.replace("adapter: python_function", "adapter: htp"))
    assert "eval.yaml:8 systems[0].adapter: unknown adapter 'htp' (known: cli, docker, git_branch, http, python_function, replay, user_simulator)" in config_error(path)


def test_unknown_evaluator_type_lists_known_types(tmp_path):
    path = write(tmp_path, BASE.replace("type: contains_text", "type: contain_text"))
    message = config_error(path)
    assert "eval.yaml:12 evaluators[0].type: unknown evaluator type 'contain_text'" in message
    known = message.split("(known: ", 1)[1].rstrip(")").split(", ")
    assert {"contains_text", "exact_match", "tool_called"} <= set(known)


def test_unknown_top_level_key_is_an_error_listing_allowed_keys(tmp_path):
    path = write(tmp_path, BASE + "colour: blue\n")
    message = config_error(path)
    assert message.startswith("eval.yaml:13 colour: unknown key (allowed: ")
    for key in ("eval", "dataset", "systems", "evaluators", "pass_criteria", "run", "output"):
        assert key in message


def test_unknown_key_in_strict_section_lists_that_sections_keys(tmp_path):
    path = write(tmp_path, BASE + "run:\n  max_concurency: 2\n")
    message = config_error(path)
    assert "eval.yaml:14 run.max_concurency: unknown key (allowed: max_concurrency," in message


def test_unknown_evaluator_config_key_is_a_warning_naming_the_closest_key(tmp_path):
    # eval-harness ignores keys an evaluator does not read: the eval loads, with a warning.
    path = write(tmp_path, BASE + "    config: {all_off: [x], description: checks the answer}\n")
    spec = load_eval(path)
    assert [str(w) for w in spec.warnings] == [
        "eval.yaml:13 evaluators[0].config.all_off: unknown key for evaluator type 'contains_text', "
        "ignored as eval-harness does (did you mean 'all_of'?)"]
    assert spec.config.evaluators[0].config == {"description": "checks the answer"}


def test_strict_makes_warnings_errors(tmp_path):
    path = write(tmp_path, BASE + "    config: {all_off: [x]}\n")
    with pytest.raises(ConfigError) as info:
        load_eval(path, strict=True)
    assert "eval.yaml:13 evaluators[0].config.all_off: unknown key" in str(info.value)
    assert "(an error with --strict)" in str(info.value)


def test_retry_on_accepts_any_text_and_warns_about_names_of_no_error_type(tmp_path):
    path = write(tmp_path, BASE + "run:\n  retry: {on: [timeout, http_500]}\n")
    spec = load_eval(path)
    assert spec.config.run.retry.on == ["timeout", "http_500"]
    (warning,) = spec.warnings
    assert str(warning).startswith("eval.yaml:14 run.retry.on[1]: 'http_500' names no error type")
    assert "did you mean 'http_5xx'?" in str(warning)


def test_missing_required_key_is_reported_with_its_path(tmp_path):
    path = write(tmp_path, BASE.replace("    adapter: python_function\n", ""))
    assert "eval.yaml:7 systems[0].adapter: required key is missing" in config_error(path)


def test_duplicate_system_names_point_at_the_second_definition(tmp_path):
    text = BASE.replace("evaluators:", "  - name: base\n    adapter: python_function\n    target: agent:run\nevaluators:")
    message = config_error(write(tmp_path, text))
    assert "eval.yaml:10 systems[1].name: duplicate name 'base': names must be unique" in message


def test_duplicate_evaluator_names_point_at_the_second_definition(tmp_path):
    path = write(tmp_path, BASE + "  - name: mentions\n    type: tool_called\n")
    assert "eval.yaml:13 evaluators[1].name: duplicate name 'mentions'" in config_error(path)


def test_pass_criteria_naming_a_missing_evaluator_lists_defined_ones(tmp_path):
    path = write(tmp_path, BASE + "pass_criteria:\n  all_required: [mentions]\n  any_required: [nope]\n")
    assert ("eval.yaml:15 pass_criteria.any_required[0]: no evaluator named 'nope' (defined: mentions)"
            in config_error(path))


def test_baseline_variant_that_is_not_a_system_is_an_error(tmp_path):
    path = write(tmp_path, BASE + "run:\n  baseline_variant: ghost\n")
    assert "eval.yaml:14 run.baseline_variant: no system named 'ghost' (defined: base)" in config_error(path)


def test_schema_version_2_is_refused(tmp_path):
    path = write(tmp_path, 'schema_version: "2.0"\n' + BASE)
    message = config_error(path)
    assert message.startswith("eval.yaml:1 schema_version:")
    assert "'2.0'" in message and "1.x only" in message


def test_schema_version_1_minor_is_accepted(tmp_path):
    assert load_eval(write(tmp_path, 'schema_version: "1.3"\n' + BASE), env={}).config.schema_version == "1.3"


def test_every_cross_check_problem_is_reported_at_once_in_line_order(tmp_path):
    text = BASE + "  - name: mentions\n    type: tool_called\npass_criteria: {all_required: [nope]}\nrun: {baseline_variant: ghost}\n"
    issues = config_error(write(tmp_path, text)).splitlines()
    assert [line.split(" ")[0] for line in issues] == ["eval.yaml:13", "eval.yaml:15", "eval.yaml:16"]


def test_missing_dataset_file_is_an_error(tmp_path):
    path = write(tmp_path, BASE, cases=False)
    assert "eval.yaml:5 dataset.path: dataset file not found" in config_error(path)


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = write(tmp_path, BASE + "run: [unclosed\n")
    message = config_error(path)
    assert "eval.yaml:" in message and "invalid YAML" in message


def test_eval_file_that_is_not_a_mapping_is_an_error(tmp_path):
    assert "must be a mapping" in config_error(write(tmp_path, "- just\n- a list\n"))



def test_duplicate_mapping_key_keeps_the_later_value_with_a_warning_naming_both_lines(tmp_path):
    # As eval-harness (PyYAML) reads it: the later value wins, and nothing of the earlier one stays.
    path = write(tmp_path, BASE + "run:\n  max_concurrency: 2\n  cost_limit_usd: 1\nrun:\n  max_concurrency: 3\n")
    spec = load_eval(path, env={})
    assert spec.config.run.max_concurrency == 3 and spec.config.run.cost_limit_usd is None
    assert [str(w) for w in spec.warnings] == [
        "eval.yaml:16 run: duplicate key: the value at eval.yaml:16 overrides the one at eval.yaml:13, "
        "as eval-harness reads it (remove one of them)"]
    with pytest.raises(ConfigError) as info:
        load_eval(path, env={}, strict=True)
    assert str(info.value) == ("eval.yaml:16 run: duplicate key: the value at eval.yaml:16 overrides the one at "
                               "eval.yaml:13, as eval-harness reads it (remove one of them) (an error with --strict)")


def test_a_key_error_after_a_duplicate_points_at_the_value_that_is_used(tmp_path):
    path = write(tmp_path, BASE + "run:\n  max_concurrency: 2\nrun:\n  max_concurrency: 0\n")
    assert "eval.yaml:16 run.max_concurrency:" in config_error(path)


def test_empty_evaluator_field_path_is_rejected_at_load(tmp_path):
    path = write(tmp_path, BASE + '    config: {field: ""}\n')
    assert "evaluators[0].config.field" in config_error(path)


def test_eval_harness_executor_keys_load_with_a_warning_and_its_pools_are_used(tmp_path):
    text = BASE.replace("    target: agent:run\n", "    target: agent:run\n    pool: gpu\n", 1)
    path = write(tmp_path, text + "run:\n  executor: {type: k8s, namespace: evals, pools: {gpu: 2}}\n")
    spec = load_eval(path)
    messages = [str(w) for w in spec.warnings]
    assert any("run.executor.namespace: namespace not used: executor 'k8s' runs the eval's steps" in m for m in messages)
    assert not any("pool" in m for m in messages)
    assert "pool" not in spec.variants[0].config
    assert spec.variant_pools == {"base": "gpu"}
    assert spec.config.run.executor.pools["gpu"].max_concurrency == 2


def test_a_pool_is_a_capacity_or_a_mapping_of_concurrency_and_requests_per_second(tmp_path):
    path = write(tmp_path, BASE + "run:\n  executor:\n    pools:\n      api: {max_concurrency: 5, requests_per_second: 2.5}\n")
    pool = load_eval(path).config.run.executor.pools["api"]
    assert (pool.max_concurrency, pool.requests_per_second) == (5, 2.5)


@pytest.mark.parametrize("pool, key", [
    ("0", "run.executor.pools.gpu.max_concurrency"),
    ("-3", "run.executor.pools.gpu.max_concurrency"),
    ("{requests_per_second: 0}", "run.executor.pools.gpu.requests_per_second"),
    ("{max_concurrency: 2, tokens: 5}", "run.executor.pools.gpu.tokens"),
    ("{}", "run.executor.pools.gpu"),
])
def test_a_zero_negative_or_empty_pool_limit_is_a_one_line_load_error(tmp_path, pool, key):
    path = write(tmp_path, BASE + f"run:\n  executor:\n    pools:\n      gpu: {pool}\n")
    message = config_error(path)
    assert key in message and len(message.strip().splitlines()) == 1


def test_an_unknown_pool_named_by_a_system_a_judge_or_an_embedder_is_a_load_error(tmp_path):
    text = BASE.replace("    target: agent:run\n", "    target: agent:run\n    pool: gpu\n", 1)
    path = write(tmp_path, text + "run:\n  executor:\n    pools: {cpu: 2}\n")
    message = config_error(path)
    assert "systems[0].pool" in message and "unknown pool 'gpu' (run.executor.pools: cpu)" in message
    judged = BASE + ("  - name: judged\n    type: llm_judge\n    config: {model: gpt-4o-mini, nl_assertions: [ok], "
                     "pool: judges}\n")
    message = config_error(write(tmp_path / "judge", judged))
    assert "evaluators[1].config.pool" in message and "unknown pool 'judges' (run.executor.pools: none defined)" in message
    embedded = BASE + ("  - name: similar\n    type: semantic_similarity\n    config: {field: output.final_answer, "
                       "reference_text: Paris, threshold: 0.5, embedder: {name: openai_compatible, pool: vectors}}\n")
    message = config_error(write(tmp_path / "embedder", embedded + "run:\n  executor:\n    pools: {cpu: 2}\n"))
    assert "evaluators[1].config.embedder.pool" in message and "unknown pool 'vectors' (run.executor.pools: cpu)" in message


def test_rate_limit_settings_reject_a_zero_budget(tmp_path):
    path = write(tmp_path, BASE + "run:\n  rate_limits: {budget_seconds: 0}\n")
    assert "run.rate_limits.budget_seconds" in config_error(path)



@pytest.mark.parametrize("gate, expected", [
    ("margin: 0", "eval.yaml:15 gates.non_inferiority.margin: margin must be a share of the pass rate between "
                  "0 and 1 (0.03: three points), got 0.0"),
    ("margin: 1.5", "eval.yaml:15 gates.non_inferiority.margin: margin must be a share of the pass rate"),
    ("margin: lots", "eval.yaml:15 gates.non_inferiority.margin: Input should be a valid number"),
    ("margin: null", "eval.yaml:15 gates.non_inferiority.margin: Input should be a valid number"),
])
def test_a_bad_non_inferiority_margin_is_one_line_naming_the_key(tmp_path, gate, expected):
    path = write(tmp_path, BASE + f"gates:\n  non_inferiority:\n    {gate}\n")
    message = config_error(path)
    assert expected in message and "\n" not in message.strip()


def test_a_bad_cluster_by_path_is_an_error_at_load(tmp_path):
    path = write(tmp_path, BASE + "run:\n  cluster_by: 'metadata[?('\n")
    message = config_error(path)
    assert "run.cluster_by" in message and "invalid field path" in message
