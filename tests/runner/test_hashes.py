"""Content hashes: stable, sensitive to what they cover, blind to what they do not, secret-free."""

from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.runner.hashes import case_hash, content_hash, evaluator_hash, fixture_hash, variant_hash


def test_content_hash_ignores_key_order_and_masks_secrets():
    assert content_hash({"a": 1, "b": [1, 2]}) == content_hash({"b": [1, 2], "a": 1})
    with_key = content_hash({"headers": {"Authorization": "Bearer sk-live-123"}}, ["sk-live-123"])
    rotated = content_hash({"headers": {"Authorization": "Bearer sk-live-456"}}, ["sk-live-456"])
    assert with_key == rotated and len(with_key) == 16


def test_case_hash_covers_input_and_expected_only():
    case = EvalCase(id="c1", input={"q": "capital?"}, expected={"answer_should_include": ["Paris"]})
    assert case_hash(case) == case_hash(case.model_copy(update={"id": "other", "metadata": {"x": 1}}))
    assert case_hash(case) != case_hash(EvalCase(id="c1", input={"q": "capital!"},
                                                 expected={"answer_should_include": ["Paris"]}))
    assert case_hash(case) != case_hash(EvalCase(id="c1", input={"q": "capital?"},
                                                 expected={"answer_should_include": ["Lyon"]}))


def test_variant_and_evaluator_hashes_follow_their_config():
    v = RunVariant(name="base", adapter="http", config={"model": "a", "api_key": "s3cret"})
    assert variant_hash(v, ["s3cret"]) == variant_hash(v.model_copy(update={"config": {"model": "a", "api_key": "n3w"}}),
                                                       ["n3w"])
    assert variant_hash(v) != variant_hash(v.model_copy(update={"config": {"model": "b", "api_key": "s3cret"}}))
    assert evaluator_hash("e", "contains_text", {}) != evaluator_hash("e", "contains_text", {"case_sensitive": True})


def test_fixture_hash_leaves_the_eval_file_and_dataset_to_the_variant_and_case_hashes():
    def recorded(dataset, tree, commit):
        return {"dataset_hash": dataset, "commit": commit, "workspace": tree,
                "paths": {"evals/x/eval.yaml": f"git:{commit}e", "evals/x/cases.jsonl": dataset, "evals/x/tree": tree}}

    covered = {"evals/x/eval.yaml", "evals/x/cases.jsonl"}
    # A commit that changed one case (and so the commit) keeps the fixture hash...
    assert fixture_hash(recorded("a", "git:t1", "c1"), covered) == fixture_hash(recorded("b", "git:t1", "c2"), covered)
    # ...a changed workspace tree does not.
    assert fixture_hash(recorded("a", "git:t1", "c1"), covered) != fixture_hash(recorded("a", "git:t2", "c1"), covered)
    # Runs recorded before path versions: the commit and workspace version.
    assert fixture_hash({"commit": "c1"}) != fixture_hash({"commit": "c2"})
