"""One exception hierarchy: every error evalh raises on purpose derives from EvalhError, under
exactly one of its three kinds, and the tree in evalh_pipeline/errors.py's docstring names it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import evalh_pipeline
from evalh_pipeline import errors
from evalh_pipeline.errors import CellError, EvalhError, InfrastructureError, UserError

# Control flow inside one module, never raised out of it (named in errors.py's docstring).
_INTERNAL = {"_Raised", "_Fixed", "NotFound", "_TransientError"}
_KINDS = (UserError, InfrastructureError, CellError)


def _package_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(evalh_pipeline.__path__, "evalh_pipeline."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException)
                    and value.__module__ == info.name and value.__module__ != errors.__name__):
                found[name] = value
    return found


def test_every_error_of_the_package_is_one_kind_of_evalh_error() -> None:
    exceptions = _package_exceptions()
    assert len(exceptions) > 40
    outside = sorted(name for name, cls in exceptions.items() if name not in _INTERNAL and not issubclass(cls, EvalhError))
    assert outside == []
    ambiguous = sorted(name for name, cls in exceptions.items() if sum(issubclass(cls, kind) for kind in _KINDS) > 1)
    assert ambiguous == []


def test_the_docstring_tree_names_every_error() -> None:
    tree = errors.__doc__ or ""
    missing = sorted(name for name in _package_exceptions() if name not in _INTERNAL and f" {name}" not in tree)
    assert missing == []


def test_errors_keep_the_builtin_base_callers_catch() -> None:
    from evalh_pipeline.common.file_kinds import NotARegularFile
    from evalh_pipeline.config.cron import CronError
    from evalh_pipeline.registry import UnknownTypeError
    from evalh_pipeline.store.locking import RunDirectoryBusy

    assert issubclass(CronError, ValueError) and issubclass(CronError, UserError)
    assert issubclass(UnknownTypeError, LookupError)
    assert issubclass(NotARegularFile, OSError)
    assert issubclass(RunDirectoryBusy, RuntimeError) and issubclass(RunDirectoryBusy, InfrastructureError)
