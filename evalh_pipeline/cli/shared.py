"""Helpers several command families share: load an eval, find a run (directory, URL, id in
a trace store), hold its lock."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import click

from evalh_pipeline.cli.group import EXIT_CONFIG, EXIT_INFRA
from evalh_pipeline.common.settings import Settings
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.terminal import error, warning

if TYPE_CHECKING:
    from evalh_pipeline.config import EvalSpec
    from evalh_pipeline.outputs.stores.base import ReadableStore


def _settings() -> Settings:
    """The command's settings: the environment as the group read it when the command started."""
    settings = click.get_current_context().find_root().obj
    assert isinstance(settings, Settings)
    return settings


def _load(eval_path: str, strict: bool = False) -> EvalSpec:
    from evalh_pipeline.config import ConfigError
    from evalh_pipeline.runner.loading import load_eval

    try:
        spec = load_eval(eval_path, strict=strict, settings=_settings())
    except ConfigError as exc:
        error(f"invalid eval config\n{exc}")
        sys.exit(EXIT_CONFIG)
    for problem in spec.warnings:
        warning(str(problem))
    return spec


def _masked(exc: BaseException, spec: EvalSpec) -> str:
    """An error's text with the eval's secrets and URL credentials masked: it reaches the terminal and CI logs."""
    from evalh_pipeline.common.masking import mask_text

    return mask_text(str(exc), spec.secret_values)


@contextmanager
def _holding(run_dir: Path | None, command: str, *, steps_elsewhere: bool = False) -> Iterator[None]:
    """Hold the run directory's writer lock for the command; refuse if another process has it.

    ``steps_elsewhere``: the run's steps execute in other processes (run.executor), each
    taking the lock while it writes; the command only refuses when another process has it."""
    from evalh_pipeline.store.locking import RunDirectoryBusy, hold_run_directory

    if run_dir is None:
        yield
        return
    try:
        lease = hold_run_directory(run_dir, command)
        lease.__enter__()
    except RunDirectoryBusy as exc:
        error(str(exc))
        sys.exit(EXIT_INFRA)
    if steps_elsewhere:  # a lock held here would keep the run's own steps waiting
        lease.__exit__(None, None, None)
        yield
        return
    try:
        yield
    finally:
        lease.__exit__(None, None, None)


def _steps_elsewhere(spec: EvalSpec) -> bool:
    """Whether ``spec``'s runs execute their steps in other processes (run.executor.type)."""
    from evalh_pipeline.config.schema import OUT_OF_PROCESS_EXECUTORS

    return spec.config.run.executor.type in OUT_OF_PROCESS_EXECUTORS


def _namespace(pairs: tuple[str, ...]) -> dict[str, str]:
    from evalh_pipeline.outputs.stores.base import parse_namespace

    try:
        return parse_namespace(pairs)
    except ValueError as exc:
        error(f"{exc}")
        sys.exit(EXIT_CONFIG)


def _runs_folder() -> Path:
    return _settings().runs_dir or Path("runs").resolve()


def _run_directory(path: str, store: str | None = None, namespace: tuple[str, ...] = (), *,
                   writing: bool = False) -> RunDirectory:
    """The run at ``path`` (a folder, a run id, a published run's URL, a run of ``store``).

    A URL is read from a fresh fetched copy; ``writing`` (a command that changes the run) works
    on the eval's local working copy of it instead, brought up to date with the URL, and
    publishes back to it."""
    if store is not None:
        from evalh_pipeline.outputs.stores.reading import fetch_from_store

        try:
            path = str(fetch_from_store(store, path, _namespace(namespace), _settings().cache))
        except (LookupError, ValueError) as exc:
            error(f"{str(exc).strip(chr(39))}")
            sys.exit(EXIT_INFRA)
        except Exception as exc:  # noqa: BLE001 - unreachable or unreadable store
            error(f"cannot read run {path} from {_safe_store(store)}: "
                      f"{type(exc).__name__}: {exc}")
            sys.exit(EXIT_INFRA)
    elif namespace:
        error("--namespace filters the runs of a --store")
        sys.exit(EXIT_CONFIG)
    elif "://" not in path and not Path(path).exists():
        path = str(_runs_folder() / path)  # a bare run id: the runs folder of the working directory
    if "://" in path:
        from evalh_pipeline.outputs.publishing import fetch_run, working_copy

        try:
            path = str((working_copy if writing else fetch_run)(path, _settings().cache))
        except Exception as exc:  # noqa: BLE001 - missing, unreachable or unreadable
            error(f"cannot fetch {_safe_store(path)}: {_storage_error(exc)}")
            sys.exit(EXIT_INFRA)
    directory = RunDirectory(Path(path).resolve())
    if not directory.exists():
        error(f"{path} is not a run directory (no run.json)")
        sys.exit(EXIT_INFRA)
    return directory


def _storage_error(exc: BaseException) -> str:
    """``Type: message`` of an error reading or writing object storage, with where credentials
    go when there were none (botocore's chain; nothing of their values)."""
    text = f"{type(exc).__name__}: {exc}"
    if type(exc).__name__ in ("NoCredentialsError", "PartialCredentialsError"):
        text += " (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or ~/.aws/credentials)"
    return text


def _safe_store(url: str) -> str:
    from evalh_pipeline.outputs.stores.postgres import redact_dsn

    return redact_dsn(url)


@contextmanager
def _opened_store(url: str, doing: str) -> Iterator[ReadableStore]:
    """The trace store at ``url``, closed after use. Failing to open or use it ends the command
    with one line, ``cannot <doing> <url without password>: <error>`` (exit 2); a command's own
    ``sys.exit`` inside the block passes through."""
    from evalh_pipeline.outputs.stores.reading import store_from_url

    try:
        store = store_from_url(url)
        try:
            yield store
        finally:
            store.close()
    except Exception as exc:  # noqa: BLE001 - unreachable, unreadable or unwritable store
        error(f"cannot {doing} {_safe_store(url)}: {type(exc).__name__}: {exc}")
        sys.exit(EXIT_INFRA)


def _spec_for_run(directory: RunDirectory, eval_path: str | None) -> EvalSpec:
    """The eval a run was made from (or ``eval_path``), pointed at the folder the run is in."""
    try:
        meta = directory.read_meta()
    except FileNotFoundError as exc:
        error(str(exc))
        sys.exit(EXIT_CONFIG)
    return _located(_load(eval_path or meta["config_path"]), directory)


def _located(spec: EvalSpec, directory: RunDirectory) -> EvalSpec:
    """``spec`` pointed at the folder ``directory`` is in: a run named on the command line is
    worked on where it is, even outside the eval's output folder."""
    from dataclasses import replace

    if Path(spec.runs_root).resolve() != directory.path.parent:
        spec = replace(spec, runs_root=str(directory.path.parent))
    return spec
