"""What an eval's fixtures were: the lineage recorded in run.json and watched by the fixture sensor.

The fixtures of an eval are its own inputs, by path: the eval file, the dataset file, the
workspace's ``copy_from`` (or ``source_repo``) tree, and every other file the eval file
names that exists beside it (a price table, a prompt, a script). Each path is versioned

- by its git object id (blob for a file, tree for a folder) at ``HEAD`` when it is tracked
  and unmodified in the working tree;
- by a sha256 of its content otherwise (untracked, ignored, modified, or no git at all).

The fingerprint ``key`` is a hash of those versions: a commit that touches none of the
paths leaves it unchanged, so it starts nothing. ``commit`` is recorded only when every
path is tracked and unmodified (the last commit that changed any of them); otherwise
``status`` says ``modified`` or ``untracked`` and the key is the content hash.

git is asked through common/git.py: the repository is the user's, so no call takes a lock
there or writes to it (the user's own ``git add`` never meets ``index.lock``), and a call
that outlives ``GIT_TIMEOUT_SECONDS`` raises :class:`~evalh_pipeline.common.git.GitError`.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.common.git import GitNotFound, GitResult, run_git
from evalh_pipeline.common.file_kinds import NotARegularFile, open_regular, special_kind

if TYPE_CHECKING:
    from evalh_pipeline.config.spec import EvalSpec

# A status of a large repository on a slow disk takes seconds; a git that takes this long is
# stuck (a network filesystem, a stopped process holding a file), and the sensor says so
# well within the minute Dagster gives a sensor's evaluation.
GIT_TIMEOUT_SECONDS = 20
NO_GIT = "nogit"
TRACKED, MODIFIED, UNTRACKED = "tracked", "modified", "untracked"


@dataclass(frozen=True)
class FixtureFingerprint:
    """The versions of an eval's input paths, and what git says about them."""

    key: str  # sha256 (24 hex) over every path's version: the sensor's cursor
    status: str  # tracked | modified | untracked
    commit: str  # the last commit that changed the paths; "" unless every path is tracked and unmodified
    dataset_hash: str  # sha256 of the dataset file's content
    workspace: str = ""  # "" without copy_from; "git:<tree id>" or "sha256:<tree hash>"
    paths: dict[str, str] = field(default_factory=dict)  # path (relative to the repo or eval folder) -> version
    # The names in ``paths`` of the eval file and the dataset: the variant and case hashes
    # cover them (runner/hashes.py), so the fixture hash leaves them out.
    covered: tuple[str, ...] = ()
    systems: dict[str, str] = field(default_factory=dict)  # variant -> "git:<commit>" / "image:<id>" (system_versions)

    def as_record(self) -> dict[str, Any]:
        """The ``fixtures`` entry of run.json (``systems`` only with a git_branch or docker variant)."""
        record = {"key": self.key, "status": self.status, "commit": self.commit, "dataset_hash": self.dataset_hash,
                  "workspace": self.workspace, "paths": dict(self.paths), "covered": list(self.covered)}
        if self.systems:
            record["systems"] = dict(self.systems)
        return record


def file_sha256(path: Path) -> str:
    """sha256 of a regular file's content; raises :class:`NotARegularFile` for a FIFO or a
    device (never opened) or a folder."""
    digest = hashlib.sha256()
    with os.fdopen(open_regular(path), "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _git(folder: Path, *args: str) -> GitResult | None:
    """``git <args>`` in a folder of the user's, with no lock taken (common/git.py); None when
    git is not installed. A command that outlives its timeout raises :class:`GitError`: a
    fingerprint made without git's answer would be a wrong one."""
    try:
        return run_git(folder, *args, timeout=GIT_TIMEOUT_SECONDS, check=False)
    except GitNotFound:
        return None


def system_versions(spec: EvalSpec) -> dict[str, str]:
    """What each variant that runs code from outside the eval ran, resolved once per run:
    ``git:<commit>`` of a ``git_branch`` variant's branch, ``image:<id>`` of a ``docker``
    variant's image. A branch or image that cannot be read is ``missing`` (the run then fails
    with the system's own error). The runner hands these to the systems, which run exactly
    that commit or image, so a branch moved or an image re-tagged mid-run changes nothing."""
    versions: dict[str, str] = {}
    for variant in spec.variants:
        if variant.adapter == "git_branch":
            versions[variant.name] = _branch_version(spec, variant.config)
        elif variant.adapter == "docker":
            versions[variant.name] = _image_version(spec, variant.config)
    return versions


def _branch_version(spec: EvalSpec, config: dict[str, Any]) -> str:
    repo = Path(str(config.get("repo_path", ""))).expanduser()
    repo = repo if repo.is_absolute() else spec.eval_dir / repo
    branch = str(config.get("branch", ""))
    # Read-only, lock-free and bounded (common/git.py): this repository is the user's.
    found = _git(repo, "rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}") \
        if repo.is_dir() and branch else None
    commit = found.text if found is not None and found.returncode == 0 else ""
    return f"git:{commit}" if commit else "missing"


def _image_version(spec: EvalSpec, config: dict[str, Any]) -> str:
    # The image's id is the hash of its configuration and layers: a rebuilt or re-pulled
    # image under the same tag has another one. Nothing is pulled here (the system does not pull either).
    from evalh_pipeline.common.containers import ContainerError, ContainerRuntime, RuntimeConfig

    image = str(config.get("image", ""))
    if not image:
        return "missing"
    host = config.get("docker_host")
    runtime = ContainerRuntime(RuntimeConfig(binary=str(config.get("binary") or "docker"),
                                             docker_host=str(host) if host else None), spec.settings.env)
    try:
        found = runtime.run("image", "inspect", "--format", "{{.Id}}", image, timeout=GIT_TIMEOUT_SECONDS)
    except ContainerError:
        return "missing"
    image_id = found.decode("utf-8", "replace").strip()
    return f"image:{image_id}" if image_id else "missing"


def git_head(folder: Path) -> str:
    """``HEAD`` of the git repository containing ``folder``; "" if none (or no git)."""
    if not folder.is_dir():
        return ""
    proc = _git(folder, "rev-parse", "--verify", "-q", "HEAD")
    head = proc.text if proc else ""
    return head if proc is not None and proc.returncode == 0 and head else ""


def git_root(folder: Path) -> Path | None:
    """The top of the git working tree containing ``folder``, if any."""
    if not folder.is_dir():
        return None
    proc = _git(folder, "rev-parse", "--show-toplevel")
    if proc is None or proc.returncode != 0 or not proc.text:
        return None
    return Path(proc.text).resolve()


def tree_sha256(root: Path) -> str:
    """A content hash of a folder: relative paths, file contents and symlink targets, in
    sorted order (symlinks are never followed, so the hash never leaves the tree). FIFOs,
    sockets and devices count by their kind (``special:fifo``): they are never opened."""
    digest = hashlib.sha256()
    entries: list[tuple[str, str]] = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        base = Path(folder)
        for name in dirs:
            if (base / name).is_symlink():
                entries.append(((base / name).relative_to(root).as_posix(), "link:" + os.readlink(base / name)))
        for name in files:
            path = base / name
            entries.append((path.relative_to(root).as_posix(), _entry_version(path)))
    for rel, content in sorted(entries):
        digest.update(f"{rel}\0{content}\n".encode())
    return digest.hexdigest()


def _entry_version(path: Path) -> str:
    """One non-folder entry of a tree: its link target, its kind if special, else its content hash."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return "missing"
    if stat.S_ISLNK(mode):
        return "link:" + os.readlink(path)
    if not stat.S_ISREG(mode):
        return f"special:{special_kind(mode)}"
    try:
        # Read every time: a file rewritten with its size and mtime kept (a copy preserving
        # times, `touch -d`, a coarse clock) is still a new version. Content is the only evidence.
        return file_sha256(path)
    except NotARegularFile:  # swapped for a special file since the lstat
        return "special:changed"


def copy_from_path(spec: EvalSpec) -> Path | None:
    """The fixture folder of the workspace (``copy_from``, or a git workspace's ``source_repo``), if any."""
    workspace = spec.config.workspace
    value = (getattr(workspace, "copy_from", None) or getattr(workspace, "source_repo", None)
             if workspace is not None else None)
    if not value:
        return None
    from evalh_pipeline.config.paths import resolve_input_path  # the config package loads the loader

    return resolve_input_path(str(value), spec.eval_dir)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def fixture_paths(spec: EvalSpec) -> list[Path]:
    """The eval's own inputs: eval file, dataset, copy_from tree, files it names beside it."""
    paths = [spec.path.resolve(), spec.dataset_path.resolve()]
    tree = copy_from_path(spec)
    if tree is not None and tree.is_dir():
        paths.append(tree.resolve())
    eval_dir = spec.eval_dir.resolve()
    for text in _strings(spec.raw):
        if not text or len(text) > 512 or "\n" in text or "://" in text:
            continue
        try:
            candidate = (eval_dir / text).resolve()
            if candidate.is_file() and candidate.is_relative_to(eval_dir):
                paths.append(candidate)
        except (OSError, ValueError):
            continue
    return sorted(set(paths))


def _content_version(path: Path) -> str:
    if path.is_dir():
        return f"sha256:{tree_sha256(path)}"
    return f"sha256:{file_sha256(path)}" if path.is_file() else "missing"


def _git_versions(root: Path, rels: list[str]) -> tuple[dict[str, str], set[str]]:
    """Object ids at HEAD of ``rels`` (tracked ones only), and the ones changed in the working tree."""
    listed = _git(root, "ls-tree", "-z", "HEAD", "--", *rels)
    ids: dict[str, str] = {}
    if listed is not None and listed.returncode == 0:
        for entry in os.fsdecode(listed.stdout).split("\0"):
            if "\t" in entry:
                info, rel = entry.split("\t", 1)
                ids[rel] = info.split()[2]
    status = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *rels)
    changed: set[str] = set()
    if status is not None and status.returncode == 0:
        for entry in os.fsdecode(status.stdout).split("\0"):
            if len(entry) > 3 and entry[2] == " ":
                changed.add(entry[3:])
    dirty = {rel for rel in rels if any(c == rel or c.startswith(rel.rstrip("/") + "/") for c in changed)}
    return ids, dirty


def fixture_fingerprint(spec: EvalSpec) -> FixtureFingerprint:
    """The current fingerprint of ``spec``'s fixtures (see the module docstring)."""
    paths = fixture_paths(spec)
    root = git_root(spec.eval_dir)
    versions: dict[str, str] = {}
    content: dict[Path, str] = {}  # path -> its content version, when it was hashed
    states: list[str] = []
    names: dict[Path, str] = {}  # path -> its name in ``versions``
    inside = [p for p in paths if p.is_relative_to(root)] if root is not None else []
    ids: dict[str, str] = {}
    dirty: set[str] = set()
    if root is not None and inside:
        ids, dirty = _git_versions(root, [p.relative_to(root).as_posix() for p in inside])
    for path in paths:
        if root is not None and path in inside:
            rel = path.relative_to(root).as_posix()
            names[path] = rel
            if rel in ids and rel not in dirty:
                versions[rel] = f"git:{ids[rel]}"
                states.append(TRACKED)
                continue
            states.append(MODIFIED if rel in ids else UNTRACKED)
        else:
            # Relative to the eval folder, so moving the whole folder keeps the key.
            rel = names[path] = Path(os.path.relpath(path, spec.eval_dir.resolve())).as_posix()
            states.append(UNTRACKED)
        versions[rel] = content[path] = _content_version(path)
    status = TRACKED if all(s == TRACKED for s in states) else MODIFIED if MODIFIED in states else UNTRACKED
    commit = ""
    if status == TRACKED and root is not None:
        log = _git(root, "log", "-1", "--format=%H", "--", *versions)
        commit = log.text if log is not None and log.returncode == 0 else ""
    systems = system_versions(spec)
    # Without a git_branch or docker variant the text (and so the key) is exactly what it always was.
    keyed = "".join(f"{rel}\0{v}\n" for rel, v in sorted(versions.items()))
    keyed += "".join(f"system:{name}\0{v}\n" for name, v in sorted(systems.items()))
    digest = hashlib.sha256(keyed.encode()).hexdigest()
    tree = copy_from_path(spec)
    workspace = ""
    if tree is not None and tree.is_dir():
        resolved = tree.resolve()
        rel = resolved.relative_to(root).as_posix() if root is not None and resolved.is_relative_to(root) \
            else resolved.as_posix()
        if root is None or not resolved.is_relative_to(root):
            rel = Path(os.path.relpath(resolved, spec.eval_dir.resolve())).as_posix()
        workspace = versions[rel] if rel in versions else _content_version(resolved)
    dataset = spec.dataset_path.resolve()
    # Hashed once per fingerprint (a dataset can be a gigabyte): its content version when it has one.
    dataset_hash = (content[dataset].removeprefix("sha256:") if content.get(dataset, "").startswith("sha256:")
                    else file_sha256(dataset) if dataset.is_file() else "")
    return FixtureFingerprint(
        key=digest[:24], status=status, commit=commit, dataset_hash=dataset_hash,
        workspace=workspace, paths=versions, systems=systems,
        covered=tuple(sorted({names[p] for p in (spec.path.resolve(), dataset) if p in names})),
    )


def workspace_version(tree: Path | None) -> str:
    """``git:<tree id>`` when ``tree`` is tracked and clean in git, else ``sha256:<tree hash>``; "" without one."""
    if tree is None or not tree.is_dir():
        return ""
    root = git_root(tree)
    if root is not None:
        rel = tree.resolve().relative_to(root).as_posix()
        if rel == ".":
            head = _git(root, "rev-parse", "HEAD^{tree}")
            clean = _git(root, "status", "--porcelain", "--untracked-files=all")
            if head and head.returncode == 0 and clean and clean.returncode == 0 and not clean.text:
                return f"git:{head.text}"
        else:
            ids, dirty = _git_versions(root, [rel])
            if rel in ids and rel not in dirty:
                return f"git:{ids[rel]}"
    return f"sha256:{tree_sha256(tree)}"


def recorded_fixtures(meta: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint a run recorded in run.json (empty for runs made before it was recorded)."""
    fixtures = meta.get("fixtures")
    return fixtures if isinstance(fixtures, dict) else {}


def recorded_system_versions(fixtures: dict[str, Any]) -> dict[str, str]:
    """``systems`` of a recorded fingerprint: variant -> the commit or image it ran."""
    systems = fixtures.get("systems")
    if not isinstance(systems, dict):
        return {}
    return {str(name): str(version) for name, version in systems.items() if isinstance(version, str)}
