"""Publishing a run directory to its outputs: the canonical URL and the mirrors (``output[]``).

The engine always works on a local run directory: JSONL appends, DuckDB reads and locks
need a real file system, and object stores have no append. When the canonical output is
a URL (anything with ``://``, ``file://`` included; only a plain path is local), the run
directory lives in a local working copy under :func:`working_root` and the publisher
copies it to ``<url>/<run_id>/`` after every stage that changes it. Mirrors
(``output[1:]``, URLs or plain folders) get the same copies.

Rules:

- each file is put whole (the recovery rule: after a stage, the finished file is uploaded
  again; a half-uploaded file is replaced by the next publish);
- a file whose content hash did not change since its last upload to that target is
  skipped (never its size or mtime: a file rewritten with both kept is uploaded again); a
  file that disappeared locally (stale drift files) is removed from the target;
- the results store (``results/``, one file per evaluator) stays local: ``results.jsonl``
  is made from it and holds the same lines, so it is what a target gets (a run fetched
  back reads it as a run without a store does);
- hidden entries at the top of the run directory (``.lock``, staging, this module's
  ``.publish-state.json``) and ``.<name>.tmp`` files anywhere are never uploaded;
  symlinks are skipped (object stores cannot hold them; workspace manifests record them);
- a canonical failure raises :class:`PublishError` (the stage fails); a mirror failure is
  appended to ``publish.jsonl`` in the run directory and returned, never raised;
- the eval's trace stores and sinks (``output[]`` entries of another type) are synced first,
  with the same rule for their failures (outputs/sync.py); failures go to the journal
  (outputs/journal.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.errors import InfrastructureError
from evalh_pipeline.outputs.journal import OutputFailure, record_failure
from evalh_pipeline.store.jsonl import FileDigest
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic

if TYPE_CHECKING:
    from evalh_pipeline.config.spec import EvalSpec


# The publish state's section of what was fetched from a canonical URL (its versions there).
_PULLED = "pulled:"


class PublishError(InfrastructureError, RuntimeError):
    """The canonical output could not take the run directory: the stage that wrote it fails."""


def is_remote(target: str) -> bool:
    """Only a plain path is worked on in place; every URL (``file://`` too) is published to."""
    return "://" in target


def working_root(url: str, cache_dir: Path) -> Path:
    """The local folder holding working copies of runs whose canonical output is ``url``.

    ``<cache_dir>/runs/<hash>`` (``cache_dir``: ``Settings.cache_dir``, $EVALH_CACHE_DIR or
    ``~/.cache/evalh``); the hash of the URL keeps evals with different outputs apart and is
    the same in every process (CLI, Dagster).
    """
    return cache_dir / "runs" / _url_hash(url)


def fetch_run(url: str, cache_dir: Path) -> Path:
    """A fresh local copy of the published run at ``url``, for the read-only commands.

    Fetched into ``<cache_dir>/fetched/<hash>/<run_id>`` (never into a working copy the
    engine may be writing), replacing an earlier fetch of the same URL.
    """
    import shutil
    import tempfile

    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    root = root.rstrip("/")
    if not fs.exists(f"{root}/run.json"):
        raise FileNotFoundError(f"{url} is not a run directory (no run.json)")
    base = cache_dir / "fetched" / _url_hash(url)
    base.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=base))
    final: Path = base / root.rsplit("/", 1)[-1]
    try:
        for path in fs.find(root):
            if not plain_key(path[len(root) + 1:]):
                continue  # never written by the publisher: it could point outside the copy
            target = staging / path[len(root) + 1:]
            target.parent.mkdir(parents=True, exist_ok=True)
            fs.get_file(path, str(target))
        shutil.rmtree(final, ignore_errors=True)
        os.rename(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def working_copy(url: str, cache_dir: Path) -> Path:
    """The local working copy of the published run at ``url`` (``<output URL>/<run_id>``),
    brought up to date with it: what a command that writes the run (``--resume``,
    ``re-evaluate``, ``retry-failed``, ``promote``) works on, on any machine. Its stages then
    publish back to the URL, as the run's own stages do (:func:`pull_run`)."""
    output, run_id = url.rstrip("/").rsplit("/", 1)
    run_dir = RunDirectory(working_root(output, cache_dir) / run_id)
    RunPublisher(output).pull(run_dir)
    if not run_dir.exists():
        raise FileNotFoundError(f"{url} is not a run directory (no run.json)")
    return run_dir.path


def run_location(spec: EvalSpec, run_id: str) -> str:
    """Where run ``run_id`` of ``spec`` is, the same on every machine: its canonical URL when
    the eval publishes to one (each machine's working copy is elsewhere), else its folder."""
    from evalh_pipeline.store.run_dir import run_directory

    canonical = (list(spec.outputs) or [spec.runs_root])[0]
    if is_remote(canonical):
        return run_url(canonical, run_id)
    return str(run_directory(spec, run_id).path.resolve())


def run_url(target: str, run_id: str) -> str:
    """Where one run lives on an output."""
    return f"{target.rstrip('/')}/{run_id}"


@dataclass
class PublishReport:
    """What one publish did: files uploaded and removed per target, and the mirror failures."""

    uploaded: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    failures: list[OutputFailure] = field(default_factory=list)


class RunPublisher:
    """Copies a local run directory to its canonical output (when remote) and its mirrors."""

    def __init__(self, canonical: str | None, mirrors: Sequence[str] = ()) -> None:
        self.canonical = canonical
        self.mirrors = list(mirrors)

    @classmethod
    def for_spec(cls, spec: EvalSpec) -> RunPublisher:
        """The publisher of an eval's ``output[]``: canonical only when it is a URL."""
        outputs = list(spec.outputs) or [spec.runs_root]
        canonical = outputs[0] if is_remote(outputs[0]) else None
        return cls(canonical, outputs[1:])

    @property
    def active(self) -> bool:
        return self.canonical is not None or bool(self.mirrors)

    def publish(self, run_dir: RunDirectory, stage: str, *,
                skip: Callable[[str], bool] | None = None) -> PublishReport:
        """Upload what changed in ``run_dir`` to every target.

        Mirrors go first so that their failures, recorded in ``publish.jsonl``, reach the
        canonical copy in the same publish. ``skip`` (a relative path -> bool) leaves files out,
        neither uploaded nor removed at the target: what another step owns (another shard's part).
        """
        report = PublishReport()
        if not self.active:
            return report
        state = _load_state(run_dir)
        try:
            for mirror in self.mirrors:
                try:
                    self._publish_to(mirror, run_dir, state, report, skip)
                except Exception as exc:  # noqa: BLE001 - a mirror never fails the run
                    failure = OutputFailure(mirror, f"{type(exc).__name__}: {exc}")
                    report.failures.append(failure)
                    record_failure(run_dir, stage, failure)
            if self.canonical is not None:
                try:
                    self._publish_to(self.canonical, run_dir, state, report, skip)
                except Exception as exc:
                    raise PublishError(
                        f"cannot publish run {run_dir.run_id} to its canonical output "
                        f"{run_url(self.canonical, run_dir.run_id)} after {stage}: {type(exc).__name__}: {exc}"
                    ) from exc
        finally:
            write_atomic(run_dir.publish_state, json.dumps(state, sort_keys=True) + "\n")
        return report

    def pull(self, run_dir: RunDirectory, *, skip: Callable[[str], bool] | None = None) -> int:
        """Fetch what changed at the canonical URL into ``run_dir`` (see :func:`pull_run`);
        ``skip`` (a relative path -> bool) leaves files where they are, not fetched."""
        import shutil

        from evalh_pipeline.store.object_storage import FsspecObjectStorage

        assert self.canonical is not None
        storage = FsspecObjectStorage(run_url(self.canonical, run_dir.run_id))
        # fsspec keeps listings per file system instance (one per process): another machine's
        # writes since are only seen in a fresh listing.
        storage.fs.invalidate_cache(storage.root)
        try:
            remote: dict[str, dict[str, Any]] = storage.fs.find(storage.root, detail=True)
        except FileNotFoundError:
            return 0
        # Hidden entries at the top are never published, nor taken back (the step values that
        # Dagster's steps keep in the run's folder: defs/evals/step_values.py).
        files = {path[len(storage.root) + 1:]: info for path, info in remote.items()
                 if path.startswith(storage.root + "/") and plain_key(path[len(storage.root) + 1:])
                 and not path[len(storage.root) + 1:].startswith(".")
                 and (skip is None or not skip(path[len(storage.root) + 1:]))}
        if "run.json" not in files:
            return 0  # not a run (yet): a new run starts here
        run_dir.path.mkdir(parents=True, exist_ok=True)
        state = _load_state(run_dir)
        taken: dict[str, str] = state.setdefault(_PULLED + self.canonical, {})
        sent: dict[str, str] = state.setdefault(self.canonical, {})
        fetched = 0
        for relative, info in sorted(files.items()):
            version = _remote_version(info)
            local = run_dir.path / relative
            if local.exists() and (taken.get(relative) == version or _same_content(local, version)):
                taken[relative] = version
                continue
            part = local.with_name(f".{local.name}.pull.tmp")
            part.parent.mkdir(parents=True, exist_ok=True)
            storage.fs.get_file(f"{storage.root}/{relative}", str(part))
            os.replace(part, local)  # whole, as published: never half a file
            taken[relative] = version
            sent[relative] = _file_digest(local)
            fetched += 1
            if relative == "results.jsonl":
                shutil.rmtree(run_dir.results_store, ignore_errors=True)
        write_atomic(run_dir.publish_state, json.dumps(state, sort_keys=True) + "\n")
        return fetched

    def _publish_to(self, target: str, run_dir: RunDirectory, state: dict[str, Any], report: PublishReport,
                    skip: Callable[[str], bool] | None = None) -> None:
        from evalh_pipeline.store.object_storage import FsspecObjectStorage, encode_path_part

        storage = FsspecObjectStorage(run_url(target, run_dir.run_id))
        seen: dict[str, str] = state.setdefault(target, {})
        current = {relative: path for relative, path in _publishable_files(run_dir)
                   if skip is None or not skip(relative)}
        for relative, path in sorted(current.items()):
            digest = _file_digest(path)
            if seen.get(relative) == digest:
                continue
            key = "/".join(encode_path_part(part) for part in relative.split("/"))
            if storage.local:
                data = path.read_bytes()
                storage.put(key, data)  # atomic: readers of a folder mirror never see half a file
                digest = _bytes_digest(data)  # what was put, even if the file changed since
            else:
                # A change after the hash was taken goes up too, and is uploaded again next time.
                storage.fs.put_file(str(path), f"{storage.root}/{key}")
            seen[relative] = digest
            if target == self.canonical:
                # What this copy put there is no news to its next pull (pull()).
                state.setdefault(_PULLED + target, {})[relative] = _remote_version(storage.fs.info(f"{storage.root}/{key}"))
            report.uploaded[target] = report.uploaded.get(target, 0) + 1
        for relative in sorted(set(seen) - set(current)):
            if skip is not None and skip(relative):
                continue  # not this publish's to remove
            key = "/".join(encode_path_part(part) for part in relative.split("/"))
            try:
                storage.fs.rm_file(f"{storage.root}/{key}")
            except FileNotFoundError:
                pass
            del seen[relative]
            report.removed[target] = report.removed.get(target, 0) + 1


def plain_key(relative: str) -> bool:
    """Whether an object's key below a run (or runs folder) is a plain relative path: a key with
    an empty, ``.`` or ``..`` part (which the publisher never writes, and S3 allows) is never
    fetched, so nothing at a URL can write outside the local copy."""
    return all(part not in ("", ".", "..") for part in relative.split("/"))


def pull_run(spec: EvalSpec, run_dir: RunDirectory, *, skip: Callable[[str], bool] | None = None) -> int:
    """Bring the local working copy of ``run_dir`` up to its canonical URL (when remote): what
    another process or machine published since this one last looked. Returns the files fetched.

    The other half of the publisher, for a run whose stages run on several machines (Dagster
    workers): each stage first pulls what earlier stages wrote elsewhere, works on the local
    copy, then publishes what it wrote. A remote file is fetched when this copy lacks it or
    its version (the store's ETag, else its size and time) changed since this copy last took
    it; what is fetched counts as published (the publisher does not send it back). A fetched
    ``results.jsonl`` replaces the local results store, now stale: the results are read from
    it as from a run fetched back (store/results_store.py ``legacy_results``). ``skip`` (a
    relative path -> bool): files not fetched now (a process that reads only the summary).
    """
    publisher = RunPublisher.for_spec(spec)
    if publisher.canonical is None:
        return 0
    return publisher.pull(run_dir, skip=skip)


def record_files(run_dir: RunDirectory) -> Callable[[str], bool]:
    """Whether a file of the run's folder is one of its records (cases, traces, results: the
    large files), for a pull that reads only the summary files (``pull_run(..., skip=...)``)."""
    records = {run_dir.cases.name, run_dir.traces.name, run_dir.results.name}
    return lambda relative: relative in records


def publish_baseline(spec: EvalSpec, runs_root: Path, eval_name: str) -> None:
    """Put the eval's promoted-baseline pointer and history (store/baselines.py) at the canonical
    URL (``<url>/baselines/<eval>/``), for the drift stages that run on other machines."""
    from evalh_pipeline.store.baselines import baseline_folder

    canonical = RunPublisher.for_spec(spec).canonical
    if canonical is None:
        return
    import fsspec

    folder = baseline_folder(runs_root, eval_name)
    fs, root = fsspec.core.url_to_fs(f"{canonical.rstrip('/')}/{folder.relative_to(runs_root).as_posix()}")
    for name in ("history.jsonl", "current.json"):  # the pointer last, as promote() writes them
        if (folder / name).exists():
            fs.put_file(str(folder / name), f"{root.rstrip('/')}/{name}")


def pull_baseline(spec: EvalSpec, runs_root: Path, eval_name: str) -> None:
    """Bring the eval's promoted baseline from the canonical URL (when remote): its pointer and
    history, and the baseline run's files into this machine's working copy, so drift compares
    against the run promoted on any machine. A URL without a pointer leaves the local one."""
    from evalh_pipeline.store.baselines import baseline_folder, current_baseline

    publisher = RunPublisher.for_spec(spec)
    if publisher.canonical is None:
        return
    import fsspec

    folder = baseline_folder(runs_root, eval_name)
    fs, root = fsspec.core.url_to_fs(f"{publisher.canonical.rstrip('/')}/{folder.relative_to(runs_root).as_posix()}")
    fs.invalidate_cache(root)
    if not fs.exists(f"{root.rstrip('/')}/current.json"):
        return
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("history.jsonl", "current.json"):
        if fs.exists(f"{root.rstrip('/')}/{name}"):
            write_atomic(folder / name, fs.cat_file(f"{root.rstrip('/')}/{name}").decode("utf-8"))
    promoted = current_baseline(runs_root, eval_name)
    if promoted is not None:
        publisher.pull(RunDirectory(runs_root / promoted.run_id))


def _url_hash(url: str) -> str:
    return hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]


def _file_digest(path: Path) -> str:
    """The content hash of a file's bytes: what decides whether a target has it already."""
    digest = FileDigest()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def _remote_version(info: dict[str, Any]) -> str:
    """A stored object's version as its store lists it: the ETag, else its size and time."""
    return str(info.get("ETag") or info.get("etag") or f"{info.get('size')}:{info.get('LastModified') or info.get('mtime')}")


def _same_content(path: Path, etag: str) -> bool:
    """Whether ``path`` holds what an object of this ETag holds: S3's ETag of a single-part
    upload is the MD5 of its bytes (a multipart one, with a ``-``, says nothing: fetched)."""
    etag = etag.strip('"')
    if len(etag) != 32 or "-" in etag:
        return False
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest() == etag


def _bytes_digest(data: bytes) -> str:
    digest = FileDigest()
    digest.update(data)
    return digest.hexdigest()


def _publishable_files(run_dir: RunDirectory) -> Iterator[tuple[str, Path]]:
    root = run_dir.path
    for folder, dirs, files in os.walk(root):
        relative_folder = os.path.relpath(folder, root)
        top = relative_folder == "."
        if top:
            dirs[:] = [d for d in dirs if not d.startswith(".") and root / d != run_dir.results_store]
        for name in files:
            if (top and name.startswith(".")) or (name.startswith(".") and name.endswith(".tmp")):
                continue
            path = Path(folder, name)
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue
            relative = name if top else f"{relative_folder.replace(os.sep, '/')}/{name}"
            yield relative, path


def _load_state(run_dir: RunDirectory) -> dict[str, Any]:
    path = run_dir.publish_state
    if not path.exists():
        return {}
    try:
        state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return state
    except json.JSONDecodeError:
        return {}  # a broken state costs a full re-upload, nothing more
