"""git_diff: expected and forbidden changes, the case fallbacks, expected patches, renames."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.base import EvaluatorContext
from evalh_pipeline.evaluators.git_diff import GitDiff
from evalh_pipeline.models import EvalCase
from tests.evaluators.fs_artifacts import a_trace, make_artifact

BEFORE = {
    "src/pricing.py": "def compute_price(x):\n    return x * 2\n",
    "src/util.py": "def helper():\n    return 1\n",
    "README.md": "# Pricing\n",
    "old.txt": "obsolete\n",
}
FIXED = {
    "src/pricing.py": "def compute_price(x):\n    return x * 3\n",
    "src/util.py": "def helper():\n    return 1\n",
    "README.md": "# Pricing\n",
    "tests/test_new.py": "import unittest\n",
}
PATCH = """\
--- a/src/pricing.py
+++ b/src/pricing.py
@@ -1,2 +1,2 @@
 def compute_price(x):
-    return x * 2
+    return x * 3
"""


def judge(config: dict, artifact, case: EvalCase | None = None, context: EvaluatorContext | None = None):
    evaluator = GitDiff("changed_right_files", "git_diff", config, context)
    return asyncio.run(evaluator.evaluate(case or EvalCase(id="c1"), a_trace(), artifact))


@pytest.fixture
def fixed(tmp_path):
    return make_artifact(tmp_path / "art", BEFORE, FIXED)


def test_passes_when_every_expected_change_is_present(fixed):
    verdict = judge({"expected_modified": ["src/pricing.py"], "expected_added": ["tests/*.py"],
                     "expected_removed": ["old.txt"], "forbidden_paths": ["README.md"]}, fixed)
    assert verdict.passed, verdict.reason
    assert verdict.detail["missing"] == {} and verdict.detail["forbidden_touched"] == {}


def test_fails_naming_the_expected_files_that_did_not_change(fixed):
    verdict = judge({"expected_modified": ["src/pricing.py", "src/util.py"], "expected_removed": ["README.md"]}, fixed)
    assert not verdict.passed
    assert verdict.detail["missing"] == {"modified": ["src/util.py"], "removed": ["README.md"]}
    assert "expected modified but not: ['src/util.py']" in verdict.reason


def test_touching_a_forbidden_path_in_any_way_fails(tmp_path):
    artifact = make_artifact(tmp_path / "a", BEFORE, {**FIXED, "README.md": "# broken\n", ".env": "X=1\n"})
    verdict = judge({"forbidden_paths": ["README.md", "**/.env"], "forbidden_modified": ["old.txt"]}, artifact)
    assert not verdict.passed
    assert verdict.detail["forbidden_touched"] == {".env": "added", "README.md": "modified", "old.txt": "removed"}


def test_a_folder_pattern_covers_everything_below_it(fixed):
    assert not judge({"forbidden_paths": ["tests"]}, fixed).passed
    assert judge({"expected_modified": ["src"]}, fixed).passed


def test_exact_fails_on_changes_nobody_expected(fixed):
    verdict = judge({"expected_modified": ["src/pricing.py"], "exact": True}, fixed)
    assert not verdict.passed
    assert verdict.detail["unexpected"] == {"added": ["tests/test_new.py"], "removed": ["old.txt"]}
    assert judge({"expected_modified": ["src/pricing.py"], "expected_added": ["tests/**"],
                  "expected_removed": ["old.txt"], "exact": True}, fixed).passed


def test_without_config_the_case_expectations_apply(fixed):
    case = EvalCase(id="c1", expected={"must_modify_files": ["src/pricing.py", "tests/test_new.py"],
                                       "must_not_modify_files": ["README.md"]})
    assert judge({}, fixed, case).passed  # an added file counts as modified for must_modify_files
    broken = EvalCase(id="c1", expected={"must_modify_files": ["src/util.py"], "must_not_modify_files": ["old.txt"]})
    verdict = judge({}, fixed, broken)
    assert not verdict.passed
    assert verdict.detail["missing"] == {"modified": ["src/util.py"]}
    assert "forbidden path removed: old.txt" in verdict.reason


def test_an_explicit_empty_list_turns_the_case_fallback_off(fixed):
    case = EvalCase(id="c1", expected={"must_modify_files": ["src/util.py"], "must_not_modify_files": ["old.txt"]})
    assert judge({"expected_modified": [], "forbidden_paths": []}, fixed, case).passed


def test_an_inline_expected_patch_matches_the_after_version(fixed):
    verdict = judge({"expected_patch": PATCH}, fixed)
    assert verdict.passed, verdict.reason
    assert verdict.detail["patch"] == {"matched": ["src/pricing.py"], "mismatched": {}}


def test_a_patch_the_run_did_not_apply_fails_with_the_differing_line(tmp_path):
    artifact = make_artifact(tmp_path / "a", BEFORE, {**FIXED, "src/pricing.py": "def compute_price(x):\n    return x * 4\n"})
    verdict = judge({"expected_patch": PATCH}, artifact)
    assert not verdict.passed
    assert "line 2: expected '    return x * 3', got '    return x * 4'" in verdict.detail["patch"]["mismatched"]["src/pricing.py"]


def test_patches_from_git_with_other_context_and_new_and_deleted_files_match(tmp_path):
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    for path, text in BEFORE.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git("add", "-A")
    git("commit", "-qm", "before")
    (repo / "old.txt").unlink()
    for path, text in FIXED.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git("add", "-A")
    patch = git("diff", "--cached", "-U1")
    artifact = make_artifact(tmp_path / "a", BEFORE, FIXED)
    verdict = judge({"expected_patch": patch}, artifact)
    assert verdict.passed, verdict.reason
    assert sorted(verdict.detail["patch"]["matched"]) == ["old.txt", "src/pricing.py", "tests/test_new.py"]


def test_the_case_patch_and_a_patch_file_are_read(tmp_path, fixed):
    case = EvalCase(id="c1", expected={"patch": PATCH})
    assert judge({}, fixed, case).passed
    (tmp_path / "fix.patch").write_text(PATCH.replace("x * 3", "x * 5"))
    verdict = judge({"expected_patch_file": "fix.patch"}, fixed, context=EvaluatorContext(eval_dir=tmp_path))
    assert not verdict.passed and "patch mismatch in src/pricing.py" in verdict.reason


def test_renamed_function_requires_old_gone_and_new_present(tmp_path):
    renamed = {**BEFORE, "src/pricing.py": "def calculate_price(x):\n    return x * 2\n",
               "src/util.py": "from src.pricing import calculate_price\n"}
    rename = {"require_renamed_function": {"old": "compute_price", "new": "calculate_price"}}
    assert judge(rename, make_artifact(tmp_path / "a", BEFORE, renamed)).passed
    half = {**renamed, "src/util.py": "from src.pricing import compute_price\n"}
    verdict = judge(rename, make_artifact(tmp_path / "b", BEFORE, half))
    assert not verdict.passed
    assert verdict.detail["rename"]["old_still_in"] == ["src/util.py"]
    verdict = judge(rename, make_artifact(tmp_path / "c", BEFORE, FIXED))
    assert not verdict.passed and "calculate_price appears in no modified or added file" in verdict.reason


def test_an_eval_without_a_workspace_is_an_error():
    evaluator = GitDiff("changed_right_files", "git_diff", {"expected_modified": ["a.py"]})
    with pytest.raises(ValueError, match="needs a workspace"):
        asyncio.run(evaluator.evaluate(EvalCase(id="c1"), a_trace(), None))


@pytest.mark.parametrize("config, message", [
    ({"forbidden_paths": ["../secrets"]}, "contains '..'"),
    ({"expected_modified": ["/etc/passwd"]}, "is absolute"),
    ({"expected_patch": "not a patch"}, "no file header"),
    ({"expected_patch": PATCH, "expected_patch_file": "x.patch"}, "not both"),
    ({"require_renamed_function": {"old": "a b", "new": "c"}}, "must be an identifier"),
    ({"expected_modifed": ["a"]}, "Extra inputs"),
])
def test_bad_config_is_refused_when_built(config, message):
    with pytest.raises(ValidationError, match=message):
        GitDiff("x", "git_diff", config)


def test_a_missing_patch_file_is_refused_when_built(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        GitDiff("x", "git_diff", {"expected_patch_file": "nope.patch"}, EvaluatorContext(eval_dir=tmp_path))


def test_symlinks_are_read_as_their_target_never_followed(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("def calculate_price(): pass  # outside the workspace\n")
    artifact = make_artifact(tmp_path / "a", BEFORE, BEFORE)
    (tmp_path / "a" / "after" / "link.py").symlink_to(outside)
    (tmp_path / "a" / "after" / "linked_dir").symlink_to(tmp_path)
    artifact.diff.added.extend(["link.py", "linked_dir/secret.txt"])
    verdict = judge({"require_renamed_function": {"old": "compute_price", "new": "calculate_price"}}, artifact)
    assert not verdict.passed and verdict.detail["rename"]["new_in"] == []
