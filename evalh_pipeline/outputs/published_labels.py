"""An eval's human labels when its runs live at a URL: ``<output URL>/labels/<eval>/labels.jsonl``,
the same file store/labels.py keeps beside a local runs folder, shared by every machine.

Each machine keeps a copy of it in its own runs folder (the working root, or the viewer's copy):
:func:`append_published_labels` adds lines at the URL and then to that copy, :func:`pull_labels`
brings the copy up to date before a summary reads it (its judge calibration).
"""

from __future__ import annotations

import errno
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.store.labels import labels_path
from evalh_pipeline.store.run_dir import write_atomic

if TYPE_CHECKING:
    from evalh_pipeline.config.spec import EvalSpec

# Conditional writes lost to another machine's label before this one is given up.
LABEL_WRITE_ATTEMPTS = 8


def published_labels_url(output: str, eval_name: str) -> str:
    """Where the label file of ``eval_name`` lives under the output URL ``output``."""
    return f"{output.rstrip('/')}/{labels_path(Path(''), eval_name).as_posix()}"


def append_published_labels(output: str, runs_root: Path, eval_name: str, labels: Iterable[HumanLabel]) -> int:
    """Add ``labels`` to the eval's label file at ``output``, then make the copy under
    ``runs_root`` what the URL now holds; how many were written.

    The file there is read and written back with the new lines, on S3 only if nobody wrote it
    in between (If-Match on its ETag, If-None-Match for a new file), else read again and
    retried: a label from another machine is never overwritten. Other protocols: the last
    writer wins."""
    import fsspec

    lines = "".join(label.model_dump_json() + "\n" for label in labels)
    if not lines:
        return 0
    url = published_labels_url(output, eval_name)
    fs, key = fsspec.core.url_to_fs(url)
    conditional = "s3" in fs.protocol
    for _attempt in range(LABEL_WRITE_ATTEMPTS):
        fs.invalidate_cache(key)
        try:
            info = fs.info(key)
            text = fs.cat_file(key).decode("utf-8")
        except FileNotFoundError:
            info, text = None, ""
        if text and not text.endswith("\n"):
            text += "\n"  # a torn last line stays its own line
        condition: dict[str, str] = {}
        if conditional:
            condition = {"IfMatch": info["ETag"]} if info is not None else {"IfNoneMatch": "*"}
        try:
            fs.pipe_file(key, (text + lines).encode("utf-8"), **condition)
        except OSError as exc:
            # s3fs's 412: FileExistsError for If-None-Match, errno EINVAL for If-Match.
            if conditional and (isinstance(exc, FileExistsError) or exc.errno == errno.EINVAL):
                continue  # another machine's label went in first: read it and add ours again
            raise
        write_atomic(labels_path(runs_root, eval_name), text + lines)
        return lines.count("\n")
    raise OSError(f"{url} changed {LABEL_WRITE_ATTEMPTS} times while labels were added: try again")


def add_labels(spec: EvalSpec, labels: Iterable[HumanLabel]) -> int:
    """Add ``labels`` to the label file of ``spec``'s eval: at its canonical URL when it publishes
    to one (and this machine's copy), else beside its runs folder; how many were written."""
    from evalh_pipeline.store.labels import append_labels
    from evalh_pipeline.outputs.publishing import RunPublisher

    canonical = RunPublisher.for_spec(spec).canonical
    if canonical is None:
        return append_labels(Path(spec.runs_root), spec.name, labels)
    return append_published_labels(canonical, Path(spec.runs_root), spec.name, labels)


def pull_labels(spec: EvalSpec) -> None:
    """Make this machine's copy of the eval's label file what its canonical URL holds (a no-op
    for a local output, or a URL without one): a summary's judge calibration then counts the
    labels added on any machine."""
    import fsspec

    from evalh_pipeline.outputs.publishing import RunPublisher

    canonical = RunPublisher.for_spec(spec).canonical
    if canonical is None:
        return
    fs, key = fsspec.core.url_to_fs(published_labels_url(canonical, spec.name))
    fs.invalidate_cache(key)
    try:
        text = fs.cat_file(key).decode("utf-8")
    except FileNotFoundError:
        return
    write_atomic(labels_path(Path(spec.runs_root), spec.name), text)
