"""Fixture fingerprints by path: the eval file, dataset and copy_from tree, git ids when tracked, content otherwise."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import replace

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.config.schema import WorkspaceConfig
from evalh_pipeline.runner.hashes import CellHashes, covered_fixture_paths, fixture_hash
from evalh_pipeline.store.fixtures import fixture_fingerprint, tree_sha256, workspace_version
from evalh_pipeline.store.run_dir import RunDirectory, write_run_header
from tests.support.evals import write_eval
from tests.same_stat import rewrite_keeping_stat


def _with_copy_from(spec, folder):
    """``spec`` with ``workspace.copy_from`` (set on the model: the loader's support is another change)."""
    config = spec.config.model_copy(update={"workspace": WorkspaceConfig(type="tempdir_snapshot", copy_from=str(folder))})
    return replace(spec, config=config)


def test_tree_hash_follows_contents_and_names_not_times(tmp_path):
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.py").write_text("x = 1\n")
    (tree / "README").write_text("hi\n")
    first = tree_sha256(tree)
    (tree / "README").write_text("hi\n")  # rewritten, same bytes
    assert tree_sha256(tree) == first
    (tree / "src" / "a.py").write_text("x = 2\n")
    assert tree_sha256(tree) != first
    (tree / "src" / "a.py").write_text("x = 1\n")
    (tree / "src" / "a.py").rename(tree / "src" / "b.py")
    assert tree_sha256(tree) != first


def test_a_copy_from_tree_changes_the_fingerprint_key(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    tree = tmp_path / "fixture_repo"
    tree.mkdir()
    (tree / "main.py").write_text("print(1)\n")
    spec = load_eval(write_eval(tmp_path / "toy", cases=2))
    plain = fixture_fingerprint(spec)
    assert plain.workspace == "" and plain.status == "untracked" and plain.commit == ""
    assert set(plain.paths) == {"eval.yaml", "cases.jsonl"}

    with_tree = fixture_fingerprint(_with_copy_from(spec, "../fixture_repo"))
    assert with_tree.workspace == f"sha256:{tree_sha256(tree)}"
    assert with_tree.key != plain.key
    (tree / "main.py").write_text("print(2)\n")
    assert fixture_fingerprint(_with_copy_from(spec, "../fixture_repo")).key != with_tree.key


def _init(repo):
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"],
                 ["config", "commit.gpgsign", "false"], ["add", "-A"], ["commit", "-q", "-m", "one"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=30)


def _out(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          timeout=30).stdout.strip()


def test_a_copy_from_tree_in_git_is_versioned_by_its_tree_id(tmp_path):
    tree = tmp_path / "fixture_repo"
    tree.mkdir()
    (tree / "main.py").write_text("print(1)\n")
    _init(tree)
    assert workspace_version(tree) == f"git:{_out(tree, 'rev-parse', 'HEAD^{tree}')}"
    (tree / "main.py").write_text("print(2)\n")
    assert workspace_version(tree) == f"sha256:{tree_sha256(tree)}"  # modified: the content, not git
    assert workspace_version(tmp_path / "missing") == ""


def test_tracked_inputs_use_git_ids_and_the_commit_that_last_changed_them(tmp_path):
    repo = tmp_path / "repo"
    spec = load_eval(write_eval(repo / "toy", cases=2))
    _init(repo)
    fixtures_commit = _out(repo, "rev-parse", "HEAD")
    (repo / "unrelated.txt").write_text("x\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, timeout=30)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "two"], check=True, timeout=30)

    fingerprint = fixture_fingerprint(spec)

    assert (fingerprint.status, fingerprint.commit) == ("tracked", fixtures_commit)
    assert fingerprint.paths["toy/cases.jsonl"] == f"git:{_out(repo, 'rev-parse', 'HEAD:toy/cases.jsonl')}"
    (repo / "toy" / "notes.txt").write_text("untracked, not an input\n")
    assert fixture_fingerprint(spec).key == fingerprint.key


def test_an_ignored_dataset_is_untracked_and_versioned_by_content(tmp_path):
    repo = tmp_path / "repo"
    spec = load_eval(write_eval(repo / "toy", cases=2))
    (repo / ".gitignore").write_text("cases.jsonl\n")
    _init(repo)
    fingerprint = fixture_fingerprint(spec)
    assert (fingerprint.status, fingerprint.commit) == ("untracked", "")
    assert fingerprint.paths["toy/cases.jsonl"].startswith("sha256:")


def test_a_fifo_in_the_tree_counts_by_its_kind_and_is_never_opened(tmp_path):
    # Opening the FIFO would block this test forever (no writer ever comes).
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "README").write_text("hi\n")
    os.mkfifo(tree / "pipe")
    first = tree_sha256(tree)
    assert tree_sha256(tree) == first
    (tree / "pipe").unlink()
    (tree / "pipe").write_text("")
    assert tree_sha256(tree) != first


def test_a_fixture_rewritten_with_its_size_and_mtime_kept_changes_the_key(tmp_path, monkeypatch):
    # The fixture sensor fingerprints every tick in one long-lived process: the second look must
    # read the file again, whatever its stat says.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    tree = tmp_path / "fixture_repo"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "main.py").write_text("answer = 1\n")
    spec = _with_copy_from(load_eval(write_eval(tmp_path / "toy", cases=2)), "../fixture_repo")
    first = fixture_fingerprint(spec)

    rewrite_keeping_stat(tree / "src" / "main.py", b"answer = 1", b"answer = 2")
    second = fixture_fingerprint(spec)
    assert second.key != first.key and second.workspace == f"sha256:{tree_sha256(tree)}" != first.workspace

    dataset = spec.dataset_path
    rewrite_keeping_stat(dataset, b"case_0", b"case_X")
    third = fixture_fingerprint(spec)
    assert third.key != second.key and third.dataset_hash != second.dataset_hash
    assert third.dataset_hash == hashlib.sha256(dataset.read_bytes()).hexdigest()


def test_a_run_asks_git_for_the_fixtures_root_once_and_hashes_as_before(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    spec = load_eval(write_eval(repo / "toy", cases=2))
    _init(repo)
    # Every git evalh starts goes through this one on PATH, which writes down its arguments.
    calls = tmp_path / "calls.log"
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {shutil.which("git")} "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    run_dir = RunDirectory(tmp_path / "runs" / "run_1")
    run_dir.path.mkdir(parents=True)

    write_run_header(run_dir, spec, "run_1")
    hashes = CellHashes.for_run(spec, run_dir, spec.variants)

    assert calls.read_text().count("rev-parse --show-toplevel") == 1
    # A run recorded before the covered names were: the same fixture hash, from git.
    fixtures = dict(run_dir.read_meta()["fixtures"])
    assert fixtures.pop("covered") == ["toy/cases.jsonl", "toy/eval.yaml"]
    assert fixture_hash(fixtures, covered_fixture_paths(spec, fixtures)) == hashes.fixture


def _with_git_branch(spec, repo, branch="main"):
    """``spec`` with one more variant that is a ``git_branch`` system of ``repo``."""
    from evalh_pipeline.models import RunVariant

    variant = RunVariant(name="branchy", adapter="git_branch",
                         config={"repo_path": str(repo), "branch": branch, "start_command": "true"})
    return replace(spec, variants=[*spec.variants, variant])


def test_a_moved_git_branch_changes_the_key_and_its_variants_hash_only(tmp_path, monkeypatch):
    from evalh_pipeline.runner.hashes import fixture_hash, versioned_variant_hash

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo = tmp_path / "system_repo"
    repo.mkdir()
    (repo / "app.py").write_text("print(1)\n")
    _init(repo)
    subprocess.run(["git", "-C", str(repo), "branch", "-M", "main"], check=True, capture_output=True, timeout=30)
    spec = _with_git_branch(load_eval(write_eval(tmp_path / "toy", cases=2)), repo)
    first = fixture_fingerprint(spec)
    assert first.systems == {"branchy": f"git:{_out(repo, 'rev-parse', 'main')}"}
    assert first.as_record()["systems"] == first.systems
    again = fixture_fingerprint(spec)
    assert again.key == first.key
    assert fixture_hash(again.as_record()) == fixture_hash(first.as_record())

    (repo / "app.py").write_text("print(2)\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", "two"], check=True, capture_output=True, timeout=30)
    moved = fixture_fingerprint(spec)
    assert moved.systems == {"branchy": f"git:{_out(repo, 'rev-parse', 'main')}"} != first.systems
    assert moved.key != first.key  # the sensor sees the branch move
    # The commit is the variant's own: its hash changes, the fixture hash shared by every
    # variant does not, so only this variant's cells are stale.
    assert fixture_hash(moved.as_record()) == fixture_hash(first.as_record())
    assert versioned_variant_hash("v", moved.systems["branchy"]) != versioned_variant_hash("v", first.systems["branchy"])
    assert versioned_variant_hash("v", None) == "v"


def test_without_a_git_branch_variant_the_key_and_fixture_hash_are_as_before(tmp_path, monkeypatch):
    from evalh_pipeline.runner.hashes import content_hash, fixture_hash

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    spec = load_eval(write_eval(tmp_path / "toy", cases=2))
    plain = fixture_fingerprint(spec)
    record = plain.as_record()
    assert "systems" not in record and plain.systems == {}
    # The formulas runs made before recorded: the key over path versions, the hash over paths only.
    text = "".join(f"{rel}\0{v}\n" for rel, v in sorted(plain.paths.items()))
    assert plain.key == hashlib.sha256(text.encode()).hexdigest()[:24]
    assert fixture_hash(record) == content_hash({"paths": plain.paths})
