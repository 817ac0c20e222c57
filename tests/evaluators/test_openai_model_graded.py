"""openai_model_graded's parsing and prompt rendering, as openai/evals' (commit 4bfc1f58)
classify_utils.get_choice (:113-131) and prompt/base.chat_prompt_to_text_prompt (:22-56)."""

from __future__ import annotations

import pytest

from evalh_pipeline.evaluators.openai_model_graded import INVALID, OpenAIModelGraded, chat_to_text, get_choice


@pytest.mark.parametrize(("reply", "parse_type", "match_fn", "choice"), [
    ("Y", "classify", "starts_or_endswith", "Y"),
    ("Yes, because\nN", "classify", "starts_or_endswith", "Y"),           # classify: the first line first
    ("Yes, because\nN", "cot_classify", "starts_or_endswith", "N"),       # cot_classify: the last line first
    ("...\n\n", "cot_classify", "starts_or_endswith", INVALID),             # empty lines are skipped
    ("(N).", "classify", "exact", "N"),                                     # punctuation removed first
    ("Answer: maybe Y", "classify", "endswith", "Y"),
    # "include" is ``line in choice`` (classify_utils.py:29): the line within the choice, not the reverse.
    ("Answer: maybe Y", "classify", "include", INVALID),
    ("N\n", "classify", "include", "N"),
])
def test_get_choice_is_openai_evals_get_choice(reply, parse_type, match_fn, choice):
    assert get_choice(reply, parse_type, match_fn, ["Y", "N"]) == choice


def test_chat_prompts_become_text_as_openai_evals_renders_them():
    assert chat_to_text([{"role": "user", "content": "only"}]) == "only"
    assert chat_to_text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                         {"role": "system", "name": "example_user", "content": "Q"}]) == "Be brief.\nUser: Hi\nUser: Q\n"


def test_the_grading_prompt_is_the_spec_filled_with_the_answer_instructions_appended():
    evaluator = OpenAIModelGraded("graded", "openai_model_graded", {
        "prompt": "Task: {input}\nAnswer: {completion}\nIdeal: {ideal}", "choice_strings": ["Y", "N"],
        "eval_type": "classify", "parse_type": "classify", "model": "m",
        "values": {"input": [{"role": "user", "content": "2+2 {{x}}"}], "ideal": ["4", "four"]}})
    (message,) = evaluator.grading_prompt("4")
    assert message == {"role": "user", "content": (
        "Task: 2+2 {{x}}\nAnswer: 4\nIdeal: ['4', 'four']\n\nAnswer the question by printing only a single choice "
        'from "Y" or "N" (without quotes or punctuation) corresponding to the correct answer with no other text.')}


def test_a_prompt_naming_a_value_the_sample_lacks_is_an_evaluator_error():
    evaluator = OpenAIModelGraded("graded", "openai_model_graded", {
        "prompt": "{criteria}: {completion}", "choice_strings": ["Y"], "parse_type": "classify", "model": "m"})
    with pytest.raises(ValueError, match="needs \\['criteria'\\]"):
        evaluator.grading_prompt("x")
