"""eval-harness 2.0.2 evaluator configs load unchanged and judge like our native form.

Each eval-harness-shaped config goes through ``load_eval`` (so the loader's validation
applies), is built like a run builds it, and its verdicts are compared with the
equivalent native config on the same traces: judges against the loopback fake judge,
filesystem evaluators against artifacts laid out on disk.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
from datetime import datetime, timezone

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from tests.support.fake_judge_server import FakeJudgeServer
from evalh_pipeline.models import EvalCase, Trace, TraceOutput
from evalh_pipeline.runner.judging import build_evaluators, judge_trace
from tests.support.evalh_process import EVALH
from tests.support.evals import write_eval
from tests.support.paths import REPO
from tests.evaluators.fs_artifacts import a_trace, make_artifact

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
CASE = EvalCase(id="c1", input={"question": "Where is listing ABC123?"},
                expected={"reference_answer": "Listing ABC123 is in Richmond near the station"})
GOOD = "Listing ABC123 is in Richmond near the station"
BAD = "I could not find that listing anywhere"


def trace(answer: str | None = GOOD, thinking: str | None = None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(final_answer=answer, thinking=thinking))


def build(tmp_path, evaluator_type: str, config: str, folder: str = "toy"):
    """The evaluator a run would build from ``config`` (YAML text under ``config:``)."""
    body = textwrap.indent(textwrap.dedent(config).strip(), " " * 6)
    evaluators = f"\n  - name: under_test\n    type: {evaluator_type}\n    config:\n{body}\n"
    spec = load_eval(write_eval(tmp_path / folder, evaluators=evaluators))
    (evaluator,) = build_evaluators(spec)
    return evaluator


def load_error(tmp_path, evaluator_type: str, config: str) -> str:
    with pytest.raises(ConfigError) as info:
        build(tmp_path, evaluator_type, config)
    (line,) = [line for line in str(info.value).splitlines() if "evaluators[0].config" in line]
    return line


def verdict(evaluator, the_trace: Trace | None = None, artifact=None, case: EvalCase = CASE):
    return asyncio.run(judge_trace([evaluator], case, the_trace or trace(), artifact))[0]


@pytest.fixture
def judge_server(monkeypatch):
    """The fake judge on loopback, reached the way eval-harness configs reach theirs: by
    the model name's backend and its environment variables (no base_url in the config)."""
    with FakeJudgeServer(hang_seconds=5) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield server


# --- llm_judge -------------------------------------------------------------------------

HARNESS_JUDGE = """
model: claude-sonnet-4
nl_assertions:
  - 'The answer names "Richmond"'
  - {text: 'The answer mentions "the station"', required: false}
pass_when: all
rubric: 'Full marks when the answer names "Richmond" and "ABC123".'
scale: {min: 1, max: 5}
rubric_pass_threshold: 4
include_in_prompt: [input, output.final_answer]
judge_response_schema: {type: object}
cost_limit_usd: 0.5
max_tokens: 512
"""
NATIVE_JUDGE = """
model: claude-sonnet-4
nl_assertions:
  - 'The answer names "Richmond"'
  - {text: 'The answer mentions "the station"', required: false}
pass_when: all
rubric: {criteria: 'Full marks when the answer names "Richmond" and "ABC123".', scale: "1-5", pass_threshold: 4}
include_in_prompt: [input, final_answer, expected]
cost_limit_usd: 0.5
max_tokens: 512
"""


def test_llm_judge_eval_harness_config_passes_and_fails_like_the_native_one(tmp_path, judge_server):
    theirs = build(tmp_path, "llm_judge", HARNESS_JUDGE, "theirs")
    ours = build(tmp_path, "llm_judge", NATIVE_JUDGE, "ours")
    assert theirs.config == ours.config
    for answer, passed in ((GOOD, True), (BAD, False)):
        mine, native = verdict(theirs, trace(answer)), verdict(ours, trace(answer))
        assert (mine.passed, mine.score, mine.error) == (native.passed, native.score, None)
        assert mine.passed is passed
    assert verdict(theirs).detail["rubric"] == {"score": 5, "pass_threshold": 4, "scale": [1, 2, 3, 4, 5],
                                                "passed": True, "reason": verdict(ours).detail["rubric"]["reason"]}


def test_llm_judge_text_rubric_alone_uses_pass_threshold(tmp_path, judge_server):
    evaluator = build(tmp_path, "llm_judge", """
        model: claude-sonnet-4
        rubric: 'Names "Richmond".'
        scale: {min: 0, max: 10}
        pass_threshold: 7
    """)
    assert evaluator.config.rubric.values == tuple(range(11)) and evaluator.config.rubric.pass_threshold == 7
    assert verdict(evaluator).passed and not verdict(evaluator, trace(BAD)).passed


def test_llm_judge_eval_harness_config_gets_an_error_when_the_judge_fails(tmp_path, judge_server):
    evaluator = build(tmp_path, "llm_judge", HARNESS_JUDGE)
    judge_server.script("error_500", "error_500")
    result = verdict(evaluator)
    assert result.error is not None and not result.passed


@pytest.mark.parametrize("config, message", [
    ("{model: claude-sonnet-4, rubric: 'Good?'}", "a text rubric (eval-harness form) needs `pass_threshold`"),
    ("{model: claude-sonnet-4, nl_assertions: [a], rubric: 'Good?', pass_threshold: 3}",
     "a text rubric (eval-harness form) needs `rubric_pass_threshold` (a number on the scale); `pass_threshold` "
     "is the key only when nl_assertions are absent"),
    ("{model: claude-sonnet-4, rubric: 'Good?', pass_threshold: 0.5, scale: {min: 0, max: 1.5}}",
     "min and max must be whole numbers"),
    ("{model: claude-sonnet-4, nl_assertions: [a], include_in_prompt: ['metrics[']}",
     "include_in_prompt entry 'metrics[' is neither a section"),
    ("{model: gemini-pro, nl_assertions: [a]}", "no judge backend serves model 'gemini-pro'"),
])
def test_llm_judge_eval_harness_keys_that_cannot_apply_are_load_errors(tmp_path, config, message):
    assert message in load_error(tmp_path, "llm_judge", config)


# --- semantic_similarity ---------------------------------------------------------------

def test_semantic_similarity_eval_harness_config_defaults_threshold_and_matches_native(tmp_path):
    theirs = build(tmp_path, "semantic_similarity", """
        embedder_name: hashing
        reference_path: case.expected.reference_answer
        field: $.output.final_answer
    """, "theirs")
    ours = build(tmp_path, "semantic_similarity", """
        embedder: hashing
        reference_path: expected.reference_answer
        threshold: 0.8
    """, "ours")
    assert theirs.config.threshold == 0.8
    for answer, passed in ((GOOD, True), (BAD, False)):
        mine, native = verdict(theirs, trace(answer)), verdict(ours, trace(answer))
        assert (mine.passed, mine.score) == (native.passed, native.score) and mine.passed is passed


def test_semantic_similarity_reference_text_wins_over_reference_path_as_in_eval_harness(tmp_path):
    evaluator = build(tmp_path, "semantic_similarity", f"""
        embedder_name: hashing
        reference_text: {BAD}
        reference_path: case.expected.reference_answer
        threshold: 0.9
    """)
    assert verdict(evaluator, trace(BAD)).passed and not verdict(evaluator, trace(GOOD)).passed


def test_semantic_similarity_openai_embedder_name_is_an_alias_and_errors_when_unreachable(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    evaluator = build(tmp_path, "semantic_similarity", "{embedder_name: openai-text-embedding-3-small, "
                                                       "reference_text: Richmond}")
    assert (evaluator.embedder.type_name, evaluator.embedder.model) == ("openai_compatible", "text-embedding-3-small")
    result = verdict(evaluator)
    assert result.error is not None and not result.passed


def test_semantic_similarity_sentence_transformers_without_its_extra_warns_and_its_results_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    evaluator = build(tmp_path, "semantic_similarity", "{embedder_name: sentence-transformers/all-MiniLM-L6-v2, "
                                                       "reference_text: Richmond}")
    hint = ("embedder 'sentence_transformers' is not available: the sentence-transformers package is not "
            "installed (pip install 'evalh-pipeline[embeddings_local]'")
    (warning,) = load_eval(tmp_path / "toy" / "eval.yaml").warnings
    assert hint in str(warning) and "evaluators[0].config.embedder" in str(warning)
    result = verdict(evaluator)
    assert not result.passed and hint in result.error.message


# --- thinking_does_not_leak ------------------------------------------------------------

HARNESS_LEAK = """
forbidden_patterns: [SECRET-42, 're:sk-[a-z]{6}']
judge_assertions: ['The thinking does not quote the "system prompt"']
model: claude-sonnet-4
cost_limit_usd: 0.5
max_tokens: 256
"""
NATIVE_LEAK = """
forbidden: [SECRET-42, 're:sk-[a-z]{6}']
case_sensitive: true
judge:
  model: claude-sonnet-4
  assertions: ['The thinking does not quote the "system prompt"']
  cost_limit_usd: 0.5
  max_tokens: 256
"""


@pytest.mark.parametrize("thinking, passed", [
    ("The user wants the suburb; answer Richmond.", True),
    ("The key is sk-abcdef, keep it quiet.", False),      # a forbidden pattern
    ("My system prompt says to be brief.", False),         # the judge's assertion
    ("secret-42 in lower case is not SECRET-42's spelling.", False),
    ("the code secret-42 is lower case", True),            # eval-harness patterns are case-sensitive
])
def test_thinking_does_not_leak_eval_harness_config_judges_like_the_native_one(tmp_path, judge_server, thinking,
                                                                              passed):
    theirs = build(tmp_path, "thinking_does_not_leak", HARNESS_LEAK, "theirs")
    ours = build(tmp_path, "thinking_does_not_leak", NATIVE_LEAK, "ours")
    mine, native = verdict(theirs, trace(thinking=thinking)), verdict(ours, trace(thinking=thinking))
    assert (mine.passed, mine.score, mine.error) == (native.passed, native.score, None)
    assert mine.passed is passed


def test_thinking_patterns_alone_still_ask_the_default_judge_as_eval_harness_does(tmp_path, judge_server):
    evaluator = build(tmp_path, "thinking_does_not_leak", "{forbidden_patterns: [Project Falcon]}")
    judge = evaluator.config.judge
    assert (judge.model, judge.max_tokens) == ("claude-4-7", 512)
    assert judge.assertions == ['The thinking does not mention, paraphrase or reference any of: "Project Falcon"']
    assert verdict(evaluator, trace(thinking="Nothing sensitive here.")).passed
    # Case-sensitive pattern misses it; the judge, as eval-harness's does, catches the mention.
    result = verdict(evaluator, trace(thinking="This is about project falcon."))
    assert not result.passed and result.detail["leaked"] == {} and "judge" in result.detail


def test_thinking_eval_harness_config_gets_an_error_when_the_judge_fails(tmp_path, judge_server):
    evaluator = build(tmp_path, "thinking_does_not_leak", HARNESS_LEAK)
    judge_server.script("error_500", "error_500")
    result = verdict(evaluator, trace(thinking="Nothing sensitive here."))
    assert result.error is not None and not result.passed


def test_thinking_default_judge_is_priced_at_eval_harness_rate_for_its_cost_limit(tmp_path, judge_server):
    evaluator = build(tmp_path, "thinking_does_not_leak", "{forbidden_patterns: [Falcon], cost_limit_usd: 0.000001}")
    price = evaluator.config.judge.price
    assert (price.input_per_mtok, price.output_per_mtok) == (3.0, 15.0)  # claude-4-7 in eval-harness's table
    result = verdict(evaluator, trace(thinking="Nothing sensitive here."))
    assert result.error is not None and "exceeds cost_limit_usd" in result.error.message
    assert judge_server.calls == 0


def test_thinking_invalid_regex_pattern_is_searched_as_literal_text_as_in_eval_harness(tmp_path, judge_server):
    evaluator = build(tmp_path, "thinking_does_not_leak", "{forbidden_patterns: ['re:(oops'], "
                                                          "judge_assertions: [anything]}")
    assert not verdict(evaluator, trace(thinking="we wrote re:(oops here")).passed
    assert verdict(evaluator, trace(thinking="(oops alone")).passed


# --- git_diff ---------------------------------------------------------------------------

BEFORE = {"src/pricing.py": "def price(x):\n    return x * 2\n", "README.md": "# Pricing\n"}
FIXED = {"src/pricing.py": "def price(x):\n    return x * 3\n", "README.md": "# Pricing\n", "src/new.py": "N = 1\n"}
TOUCHED_README = {**FIXED, "README.md": "# Pricing!\n"}
PATCH = """\
--- a/src/pricing.py
+++ b/src/pricing.py
@@ -1,2 +1,2 @@
 def price(x):
-    return x * 2
+    return x * 3
"""


@pytest.mark.parametrize("after, passed", [(FIXED, True), (TOUCHED_README, False), (BEFORE, False)])
def test_git_diff_eval_harness_config_judges_like_the_native_one(tmp_path, after, passed):
    theirs = build(tmp_path, "git_diff", "{must_modify_files: [src/pricing.py, src/new.py], "
                                         "must_not_modify_files: [README.md]}", "theirs")
    ours = build(tmp_path, "git_diff", "{expected_modified: [src/pricing.py], expected_added: [src/new.py], "
                                       "forbidden_paths: [README.md]}", "ours")
    artifact = make_artifact(tmp_path / "art", BEFORE, after)
    mine, native = verdict(theirs, a_trace(), artifact), verdict(ours, a_trace(), artifact)
    assert (mine.passed, mine.score, mine.error) == (native.passed, native.score, None)
    assert mine.passed is passed


def test_git_diff_empty_eval_harness_lists_fall_back_to_the_case(tmp_path):
    evaluator = build(tmp_path, "git_diff", "{must_modify_files: [], must_not_modify_files: []}")
    case = EvalCase(id="c1", expected={"must_modify_files": ["src/pricing.py"], "must_not_modify_files": ["README.md"]})
    assert verdict(evaluator, a_trace(), make_artifact(tmp_path / "a", BEFORE, FIXED), case).passed
    result = verdict(evaluator, a_trace(), make_artifact(tmp_path / "b", BEFORE, TOUCHED_README), case)
    assert not result.passed and result.reason == "forbidden path modified: README.md"


def test_git_diff_expected_patch_path_must_be_the_whole_diff(tmp_path):
    patch = tmp_path / "fix.patch"
    patch.write_text(PATCH)
    evaluator = build(tmp_path, "git_diff", f"{{expected_patch_path: {patch}}}")
    only_pricing = {**BEFORE, "src/pricing.py": FIXED["src/pricing.py"]}
    assert verdict(evaluator, a_trace(), make_artifact(tmp_path / "a", BEFORE, only_pricing)).passed
    result = verdict(evaluator, a_trace(), make_artifact(tmp_path / "b", BEFORE, FIXED))
    assert not result.passed and result.reason == "changed but not in expected_patch_path: ['src/new.py']"


def test_git_diff_eval_harness_config_without_a_workspace_is_an_error(tmp_path):
    evaluator = build(tmp_path, "git_diff", "{must_modify_files: [src/pricing.py]}")
    result = verdict(evaluator, a_trace(), None)
    assert result.error is not None and "needs a workspace" in result.error.message


# --- command ---------------------------------------------------------------------------

CHECK = "import os, sys; sys.exit(0 if open('src/pricing.py').read().count('* 3') else 1)"


@pytest.mark.parametrize("after, passed", [(FIXED, True), (BEFORE, False)])
def test_command_eval_harness_config_judges_like_the_native_one(tmp_path, after, passed):
    theirs = build(tmp_path, "command", f"""
        cmd: [{sys.executable}, -c, "{CHECK}"]
        cwd: artifact
        timeout_seconds: 30
        expected_exit_code: 0
        capture_output: true
    """, "theirs")
    ours = build(tmp_path, "command", f'{{command: [{sys.executable}, -c, "{CHECK}"], timeout_seconds: 30}}', "ours")
    artifact = make_artifact(tmp_path / "art", BEFORE, after)
    mine, native = verdict(theirs, a_trace(), artifact), verdict(ours, a_trace(), artifact)
    assert (mine.passed, mine.error) == (native.passed, None) and mine.passed is passed


def test_command_cmd_inherits_the_environment_and_times_out_at_60s_as_in_eval_harness(tmp_path, monkeypatch):
    monkeypatch.setenv("EH_COMPAT_MARKER", "present")
    probe = "import os, sys; sys.exit(0 if os.environ.get('EH_COMPAT_MARKER') == 'present' else 3)"
    theirs = build(tmp_path, "command", f'{{cmd: [{sys.executable}, -c, "{probe}"]}}', "theirs")
    ours = build(tmp_path, "command", f'{{command: [{sys.executable}, -c, "{probe}"]}}', "ours")
    assert (theirs.config.timeout_seconds, ours.config.timeout_seconds) == (60.0, 120.0)
    artifact = make_artifact(tmp_path / "art", BEFORE, FIXED)
    assert verdict(theirs, a_trace(), artifact).passed
    assert not verdict(ours, a_trace(), artifact).passed


def test_command_eval_harness_config_without_a_workspace_is_an_error(tmp_path):
    evaluator = build(tmp_path, "command", "{cmd: [ls], cwd: artifact}")
    result = verdict(evaluator, a_trace(), None)
    assert result.error is not None and "needs a workspace" in result.error.message


@pytest.mark.parametrize("config, message", [
    ("{cmd: [ls], cwd: /tmp}", "cwd '/tmp' is not supported: evalh always runs the command in a fresh copy"),
    ("{cmd: [ls], command: [ls]}", "give command or cmd (eval-harness's key), not both"),
    ("{cmd: 'make test'}", "command must be a list of arguments (argv), not a string"),
])
def test_command_eval_harness_keys_that_cannot_apply_are_load_errors(tmp_path, config, message):
    assert message in load_error(tmp_path, "command", config)


# --- side by side with eval-harness itself (optional) -----------------------------------

HARNESS_FS_EVALUATORS = """evaluators:
  - name: changed_the_right_files
    type: git_diff
    config: {must_modify_files: [], must_not_modify_files: []}
  - name: tests_pass
    type: command
    config: {cmd: [python, -m, unittest], cwd: artifact, timeout_seconds: 60, expected_exit_code: 0,
             capture_output: true}
output:
  - type: local_files
    path: ./runs
"""


def _verdicts(folder) -> dict[tuple[str, str, str], tuple[bool, bool]]:
    (results,) = (folder / "runs").glob("*/results.jsonl")
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    return {(r["case_id"], r["variant_name"], r["evaluator"]): (r["passed"], r.get("error") is not None) for r in rows}


@pytest.mark.skipif(not os.environ.get("EVAL_HARNESS_EVALH"), reason="set EVAL_HARNESS_EVALH to eval-harness's evalh")
def test_eval_harness_itself_gives_the_same_filesystem_verdicts(tmp_path):
    source = REPO / "evals" / "coding_agent"
    text = (source / "eval.yaml").read_text()
    text = text[:text.index("evaluators:")] + HARNESS_FS_EVALUATORS + text[text.index("pass_criteria:"):]
    folders = {}
    for who, argv in (("theirs", [os.environ["EVAL_HARNESS_EVALH"]]), ("ours", EVALH)):
        folder = tmp_path / who
        shutil.copytree(source, folder, ignore=shutil.ignore_patterns("eval_git.yaml", "runs", "__pycache__"))
        (folder / "eval.yaml").write_text(text)
        subprocess.run([*argv, "run", "eval.yaml"], cwd=folder, env={**os.environ, "PYTHONPATH": str(folder)},
                       capture_output=True, timeout=300)  # a failed gate exits non-zero; verdicts are compared
        folders[who] = _verdicts(folder)
    assert len(folders["theirs"]) == 8
    assert folders["ours"] == folders["theirs"]
    assert sum(passed for passed, _ in folders["ours"].values()) == 5


def test_llm_judge_include_in_prompt_takes_any_trace_path_as_eval_harness(tmp_path, judge_server):
    evaluator = build(tmp_path, "llm_judge", f"""
        model: gpt-4o-mini
        base_url: {judge_server.openai_base_url}
        nl_assertions: ['The answer mentions "42"']
        include_in_prompt: [input, $.extra.order_total, case.metadata.region]
    """)
    assert evaluator.config.include_in_prompt == ["input", "$.extra.order_total", "case.metadata.region", "expected"]
    the_trace = trace("I cannot say")
    the_trace.extra["order_total"] = 42
    case = CASE.model_copy(update={"metadata": {"region": "eu"}})
    from evalh_pipeline.judges.prompt import build_prompt

    prompt = build_prompt(case, the_trace, evaluator.config.include_in_prompt, evaluator._assertions, None)
    assert "## Field $.extra.order_total\n42" in prompt.user and "## Field case.metadata.region\neu" in prompt.user
    assert verdict(evaluator, the_trace, case=case).passed  # the fake judge reads the path sections
