"""``git_diff``: the run changed the right files, only those, and (optionally) in the right way."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from evalh_pipeline.evaluators import eval_harness_keys
from evalh_pipeline.evaluators.artifact_files import ArtifactFiles
from evalh_pipeline.evaluators.base import (
    Evaluator,
    EvaluatorConfigModel,
    EvaluatorContext,
    Verdict,
)
from evalh_pipeline.evaluators.path_globs import PathGlob, check_globs, compile_globs
from evalh_pipeline.evaluators.unified_patch import (
    PatchError,
    apply_file_patch,
    parse_patch,
)
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class RenamedFunction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    old: str
    new: str

    @model_validator(mode="after")
    def _names(self) -> RenamedFunction:
        for key in ("old", "new"):
            if not _IDENTIFIER.match(getattr(self, key)):
                raise ValueError(f"require_renamed_function.{key} must be an identifier, got {getattr(self, key)!r}")
        if self.old == self.new:
            raise ValueError("require_renamed_function: old and new are the same name")
        return self


class GitDiffConfig(EvaluatorConfigModel):
    # None means "not given": expected_modified / forbidden_paths then fall back to the case.
    expected_modified: list[str] | None = None
    expected_added: list[str] | None = None
    expected_removed: list[str] | None = None
    exact: bool = False
    forbidden_paths: list[str] | None = None
    forbidden_modified: list[str] | None = None  # Filesystem.md's spelling; same meaning
    expected_patch: str | None = None
    expected_patch_file: str | None = None
    require_renamed_function: RenamedFunction | None = None
    # eval-harness's keys: paths to be modified or added (like the case's must_modify_files),
    # and a patch file (absolute or relative to the eval folder) that must be the whole diff.
    must_modify_files: list[str] | None = None
    expected_patch_path: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _eval_harness_keys(cls, data: Any) -> Any:
        return eval_harness_keys.git_diff(data)

    @field_validator("expected_modified", "expected_added", "expected_removed", "forbidden_paths",
                     "forbidden_modified", "must_modify_files")
    @classmethod
    def _globs(cls, value: list[str] | None) -> list[str] | None:
        return check_globs(value)

    @field_validator("expected_patch")
    @classmethod
    def _patch_parses(cls, value: str | None) -> str | None:
        if value is not None:
            parse_patch(value)
        return value

    @field_validator("expected_patch_file")
    @classmethod
    def _relative_file(cls, value: str | None) -> str | None:
        if value is not None and (Path(value).is_absolute() or ".." in Path(value).parts):
            raise ValueError(f"expected_patch_file {value!r} must be relative to the eval folder, without '..'")
        return value

    @model_validator(mode="after")
    def _one_patch(self) -> GitDiffConfig:
        if self.expected_patch is not None and self.expected_patch_file is not None:
            raise ValueError("give expected_patch or expected_patch_file, not both")
        return self


class GitDiff(Evaluator[GitDiffConfig]):
    """Checks what the run changed on disk, from the artifact's diff (any workspace kind).

    - ``expected_modified`` / ``expected_added`` / ``expected_removed``: path globs (see
      :class:`PathGlob`) that must each match at least one modified / added / removed
      file ("must include"). Without ``expected_modified`` the case's
      ``expected.must_modify_files`` is used, matched against modified *or* added files
      (a file the case must change may also be one the run creates).
    - ``exact: true``: in addition, every change must be expected — each modified, added
      or removed path must match a pattern of its kind; an empty list then means "none".
    - ``forbidden_paths`` (or ``forbidden_modified``, Filesystem.md's name; both apply):
      globs no change of any kind may touch. Without either, the case's
      ``expected.must_not_modify_files``. An explicit empty list turns the fallback off.
    - ``expected_patch`` (inline unified diff text), ``expected_patch_file`` (read once
      when the eval loads, relative to the eval folder) or, without both, the case's
      ``expected.patch``: for each file the patch names, the after-version must equal the
      before-version with the patch applied (line ends ignored). Files it does not name
      are not compared; use ``exact`` for those.
    - ``require_renamed_function: {old, new}``: ``old`` (as a whole word) appears in no
      modified or added file's after-version and ``new`` appears in at least one.

    - eval-harness's keys: ``must_modify_files`` (modified or added, like the case's list),
      ``must_not_modify_files`` (added to ``forbidden_paths``; an empty list of either falls
      back to the case) and ``expected_patch_path`` (as ``expected_patch_file``, absolute
      allowed, and no file outside the patch may change: eval-harness compares whole diffs).

    Needs a workspace: an eval without ``workspace:`` gets an error result.
    """

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        cfg = self.config
        self._patch_text = cfg.expected_patch
        # eval-harness compares the whole diff with expected_patch_path: no other file may change.
        self._patch_is_whole_diff = cfg.expected_patch_path is not None
        for key in ("expected_patch_file", "expected_patch_path"):
            name = getattr(cfg, key)
            if name is None:
                continue
            path = self.context.eval_dir / name  # an absolute name stays absolute
            try:
                self._patch_text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise ValueError(f"{key} {name!r}: cannot read {path}: {exc}") from None
            try:
                parse_patch(self._patch_text)
            except PatchError as exc:
                raise ValueError(f"{key} {name!r}: {exc}") from None

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        if artifact is None:
            raise ValueError(f"{self.type_name} needs a workspace: add a `workspace:` block to the eval "
                             f"(e.g. type: tempdir_snapshot) so runs leave a FilesystemArtifact")
        diff = artifact.diff
        problems: list[str] = []
        detail: dict[str, Any] = {
            "modified": sorted(diff.modified), "added": sorted(diff.added), "removed": sorted(diff.removed),
        }
        problems += self._check_expected(case, artifact, detail)
        problems += self._check_forbidden(case, artifact, detail)
        patch_text = self._patch_text if self._patch_text is not None else _case_patch(case)
        if patch_text is not None:
            problems += await _check_patch(patch_text, ArtifactFiles(artifact), detail)
            if self._patch_is_whole_diff:
                named = {file_patch.path for file_patch in parse_patch(patch_text)}
                others = sorted({*diff.modified, *diff.added, *diff.removed} - named)
                detail["patch"]["not_in_patch"] = others
                if others:
                    problems.append(f"changed but not in expected_patch_path: {others}")
        if self.config.require_renamed_function is not None:
            problems += await _check_rename(self.config.require_renamed_function, ArtifactFiles(artifact), detail)
        if problems:
            return Verdict(False, "; ".join(problems), score=0.0, detail=detail)
        return Verdict(True, "the diff matches the expectations", score=1.0, detail=detail)

    def _check_expected(self, case: EvalCase, artifact: FilesystemArtifact, detail: dict[str, Any]) -> list[str]:
        cfg, diff = self.config, artifact.diff
        # kind -> (patterns, paths they are matched against)
        rules: dict[str, tuple[list[str], list[str]]] = {}
        if cfg.expected_modified is not None:
            rules["modified"] = (cfg.expected_modified, diff.modified)
        elif cfg.must_modify_files is not None:
            rules["modified"] = (cfg.must_modify_files, [*diff.modified, *diff.added])
        elif case.expected.must_modify_files:
            rules["modified"] = (case.expected.must_modify_files, [*diff.modified, *diff.added])
        if cfg.expected_added is not None:
            rules["added"] = (cfg.expected_added, diff.added)
        if cfg.expected_removed is not None:
            rules["removed"] = (cfg.expected_removed, diff.removed)

        problems: list[str] = []
        missing: dict[str, list[str]] = {}
        for kind, (patterns, paths) in rules.items():
            unmatched = [g.pattern for g in compile_globs(patterns) if not any(g.matches(p) for p in paths)]
            if unmatched:
                missing[kind] = unmatched
                problems.append(f"expected {kind} but not: {unmatched}")
        detail["expected"] = {kind: patterns for kind, (patterns, _) in rules.items()}
        detail["missing"] = missing
        if cfg.exact:
            allowed = {kind: compile_globs(rules.get(kind, ([], []))[0]) for kind in ("modified", "added", "removed")}
            if "modified" in rules and cfg.expected_modified is None:
                allowed["added"] += allowed["modified"]  # must_modify_files also covers created files
            unexpected = {
                kind: [p for p in sorted(getattr(diff, kind)) if not any(g.matches(p) for g in allowed[kind])]
                for kind in ("modified", "added", "removed")
            }
            unexpected = {kind: paths for kind, paths in unexpected.items() if paths}
            detail["unexpected"] = unexpected
            problems += [f"unexpected {kind}: {paths}" for kind, paths in unexpected.items()]
        return problems

    def _check_forbidden(self, case: EvalCase, artifact: FilesystemArtifact, detail: dict[str, Any]) -> list[str]:
        cfg, diff = self.config, artifact.diff
        if cfg.forbidden_paths is None and cfg.forbidden_modified is None:
            patterns = list(case.expected.must_not_modify_files)
        else:
            patterns = [*(cfg.forbidden_paths or []), *(cfg.forbidden_modified or [])]
        globs = compile_globs(patterns)
        touched = {
            path: kind
            for kind in ("modified", "added", "removed") for path in getattr(diff, kind)
            if any(g.matches(path) for g in globs)
        }
        detail["forbidden"] = patterns
        detail["forbidden_touched"] = dict(sorted(touched.items()))
        return [f"forbidden path {kind}: {path}" for path, kind in sorted(touched.items())]


def _case_patch(case: EvalCase) -> str | None:
    patch = (case.expected.model_extra or {}).get("patch")
    if patch is not None and not isinstance(patch, str):
        raise ValueError(f"case {case.id!r}: expected.patch must be unified diff text, got {type(patch).__name__}")
    return patch


async def _check_patch(patch_text: str, files: ArtifactFiles, detail: dict[str, Any]) -> list[str]:
    matched: list[str] = []
    mismatched: dict[str, str] = {}
    for file_patch in parse_patch(patch_text):
        path = file_patch.path
        PathGlob(path)  # refuses absolute paths and '..' before anything is read
        before = _lines(await files.version("before", path))
        after = _lines(await files.version("after", path))
        try:
            wanted = apply_file_patch(file_patch, before)
        except PatchError as exc:
            mismatched[path] = str(exc)
            continue
        if wanted is None or after is None:
            if wanted is None and after is None:
                matched.append(path)
            else:
                mismatched[path] = "the patch deletes the file but it still exists" if wanted is None \
                    else "the patch keeps the file but the run removed it"
            continue
        problem = _first_difference(wanted, after)
        if problem:
            mismatched[path] = problem
        else:
            matched.append(path)
    detail["patch"] = {"matched": matched, "mismatched": mismatched}
    return [f"patch mismatch in {path}: {why}" for path, why in mismatched.items()]


async def _check_rename(rename: RenamedFunction, files: ArtifactFiles, detail: dict[str, Any]) -> list[str]:
    old_word, new_word = re.compile(rf"\b{rename.old}\b"), re.compile(rf"\b{rename.new}\b")
    diff = files.artifact.diff
    still_old: list[str] = []
    has_new: list[str] = []
    for path in sorted({*diff.modified, *diff.added}):
        data = await files.version("after", path)
        if data is None:
            continue
        text = data.decode("utf-8", errors="replace")
        if old_word.search(text):
            still_old.append(path)
        if new_word.search(text):
            has_new.append(path)
    detail["rename"] = {"old": rename.old, "new": rename.new, "old_still_in": still_old, "new_in": has_new}
    problems = []
    if still_old:
        problems.append(f"{rename.old} still appears in {still_old}")
    if not has_new:
        problems.append(f"{rename.new} appears in no modified or added file")
    return problems


def _lines(data: bytes | None) -> list[str] | None:
    return None if data is None else data.decode("utf-8", errors="replace").splitlines()


def _first_difference(wanted: list[str], actual: list[str]) -> str | None:
    for number, (w, a) in enumerate(zip(wanted, actual), start=1):
        if w.rstrip() != a.rstrip():
            return f"line {number}: expected {w!r}, got {a!r}"
    if len(wanted) != len(actual):
        return f"expected {len(wanted)} lines after the patch, got {len(actual)}"
    return None
