"""A runs folder on object storage (``<output URL>/``) as a local folder, for readers that need
a real file system (the viewer: DuckDB over the JSONL).

    <cache_dir>/viewed/<hash of the URL>/<run_id>/...      each run, as published
    <cache_dir>/viewed/<hash of the URL>/baselines/<eval>/  the promoted-baseline pointers
    <cache_dir>/viewed/<hash of the URL>/labels/<eval>/     the human labels

Every run is brought up to date with the URL the way a working copy is (outputs/publishing.py
``RunPublisher.pull``: only files whose version there changed are fetched, each whole), so a
run published from any machine shows once :meth:`RunsMirror.sync` has run. Nothing is ever
written to the URL but labels (:meth:`RunsMirror.append_labels`), added to the label file
there (outputs/published_labels.py).
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.store.baselines import BASELINES, Baseline
from evalh_pipeline.store.labels import LABELS
from evalh_pipeline.outputs.published_labels import append_published_labels
from evalh_pipeline.outputs.publishing import RunPublisher, _remote_version as remote_version, _url_hash, plain_key, \
    run_url, working_root
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic


class RunsMirror:
    """The local copy of the runs folder at ``url`` (``only``: of that one run, with the folder's
    baselines and labels)."""

    def __init__(self, url: str, cache_dir: Path, only: str | None = None) -> None:
        import fsspec

        self.url = url.rstrip("/")
        self.only = only
        self.cache_dir = cache_dir
        self.root = cache_dir / "viewed" / _url_hash(self.url)
        self.fs, remote = fsspec.core.url_to_fs(self.url)
        self.remote = remote.rstrip("/")
        # One sync at a time: two pages of one run must not fetch the same files together.
        self._syncing = threading.Lock()
        self._versions: dict[str, str] = {}  # of the baselines' and labels' files last fetched

    def sync(self, run_id: str | None = None) -> None:
        """Bring the copy up to date with the URL: every run (or ``run_id`` alone), the
        baselines and labels; runs deleted there are deleted here."""
        with self._syncing:
            self._sync(run_id)

    def _sync(self, run_id: str | None) -> None:
        self.fs.invalidate_cache(self.remote)  # another machine's writes show in a fresh listing only
        try:
            listed = self.fs.ls(self.remote, detail=False)
        except FileNotFoundError:
            listed = []  # no run published there yet
        names = {path.rstrip("/").rsplit("/", 1)[-1] for path in listed}
        self.root.mkdir(parents=True, exist_ok=True)  # after the listing: nothing made for storage it cannot read
        publisher = RunPublisher(self.url)
        for name in (BASELINES, LABELS):  # a run's pages show whether it is the baseline, and its labels
            self._sync_tree(name, present=name in names)
        wanted = {run_id} if run_id is not None else names - {BASELINES, LABELS}
        if self.only is not None:
            wanted &= {self.only}
        for name in sorted(wanted & names):
            if not name.startswith("."):
                publisher.pull(RunDirectory(self.root / name))
        for local in [self.root / run_id] if run_id is not None else list(self.root.iterdir()):
            if local.name not in names and local.is_dir() and RunDirectory(local).exists():
                shutil.rmtree(local)  # deleted at the URL (evalh delete-run on another machine)

    def _sync_tree(self, name: str, *, present: bool) -> None:
        """``<url>/<name>/`` (pointers, label files) in the copy: each file fetched whole when its
        version there (ETag, else size and time) is not the one last fetched."""
        local = self.root / name
        if not present:
            shutil.rmtree(local, ignore_errors=True)
            return
        remote = f"{self.remote}/{name}"
        found = set()
        for path, info in self.fs.find(remote, detail=True).items():
            relative = path[len(remote) + 1:]
            if not plain_key(relative):
                continue  # never written by evalh: it could point outside the copy
            found.add(relative)
            version = remote_version(info)
            if self._versions.get(path) != version or not (local / relative).is_file():
                write_atomic(local / relative, self.fs.cat_file(path).decode("utf-8"))
                self._versions[path] = version
        for stale in [p for p in local.rglob("*") if p.is_file() and p.relative_to(local).as_posix() not in found]:
            stale.unlink()

    def append_labels(self, runs_root: Path, eval_name: str, labels: Iterable[HumanLabel]) -> int:
        """Add ``labels`` to the eval's label file at the URL, then to the copy (as
        store/labels.py ``append_labels`` adds them to a local one); how many were written."""
        assert runs_root.resolve() == self.root.resolve(), "labels of another runs folder"
        return append_published_labels(self.url, self.root, eval_name, labels)

    def run_metas(self) -> dict[str, dict[str, Any]]:
        """Each run at the URL (a folder with a run.json) and its run.json, read there."""
        self.fs.invalidate_cache(self.remote)
        try:
            listed = self.fs.ls(self.remote, detail=False)
        except FileNotFoundError:
            return {}
        metas = {}
        for path in listed:
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if name in (BASELINES, LABELS) or name.startswith("."):
                continue
            try:
                meta = json.loads(self.fs.cat_file(f"{self.remote}/{name}/run.json"))
            except FileNotFoundError:
                continue  # not a run
            if isinstance(meta, dict):
                metas[name] = meta
        return metas

    def delete_run(self, run_id: str) -> None:
        """Delete run ``run_id`` at the URL, then this machine's copies of it (the viewer's and
        the working copy the writing commands use)."""
        folder = f"{self.remote}/{run_id}"
        if self.fs.exists(folder):
            self.fs.rm(folder, recursive=True)
        for local in (self.root / run_id, working_root(self.url, self.cache_dir) / run_id):
            shutil.rmtree(local, ignore_errors=True)

    def promoted(self, eval_name: str) -> Baseline | None:
        """The promoted baseline of ``eval_name`` as the pointer at the URL says (no copy made)."""
        pointer = f"{self.remote}/{BASELINES}/{eval_name}/current.json"
        self.fs.invalidate_cache(pointer)
        try:
            text = self.fs.cat_file(pointer).decode("utf-8")
        except FileNotFoundError:
            return None
        return Baseline.from_json(text, Path(run_url(self.url, f"{BASELINES}/{eval_name}/current.json")))
