"""The `evalh` click group: exit codes, the run-location argument type and the options
several commands share."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from evalh_pipeline.common.settings import Settings
from evalh_pipeline.errors import UserError
from evalh_pipeline.terminal import err, error

EXIT_OK, EXIT_CONFIG, EXIT_INFRA, EXIT_INTERRUPTED = 0, 1, 2, 130
# `run --fail-on-gate`: a gate failed (like `drift --exit-nonzero-on-regression`).
EXIT_GATE = 1


class _RunLocation(click.ParamType[str, Any]):
    """A run directory, the URL of a run published through ``output[]``, or a bare run id
    (looked up in --store, else in the runs folder: $EVALH_RUNS_DIR or ./runs)."""

    name = "run"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from evalh_pipeline.store.run_dir import RUN_ID_PATTERN

        if "://" in str(value):
            return str(value)
        if not Path(str(value)).exists() and RUN_ID_PATTERN.match(str(value)):
            return str(value)
        return click.Path(file_okay=False, exists=True, path_type=str).convert(value, param, ctx)


class _EvalhGroup(click.Group):
    """click's group with evalh's exit codes: a usage error (bad option, a folder where a
    file is expected) exits 1 like any other invalid input, not click's 2, which evalh
    reserves for infrastructure failures; a ``UserError`` no command caught is shown as one
    ``error:`` line, exit 1."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            exc.show()
            sys.exit(EXIT_CONFIG)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            err.line("interrupted.")
            sys.exit(EXIT_INTERRUPTED)
        except UserError as exc:
            # Bad input no command reported itself: its line(s), never a traceback.
            error(str(exc))
            sys.exit(EXIT_CONFIG)
        sys.exit(result if isinstance(result, int) else EXIT_OK)


def console_main() -> None:
    """The ``evalh`` program (the console script)."""
    main()


@click.group(cls=_EvalhGroup)
@click.version_option(package_name="evalh-pipeline")
@click.pass_context
def main(ctx: click.Context) -> None:
    """evalh: an evaluation harness for AI systems, orchestrated by Dagster."""
    # The environment is read here, once per command; what runs below gets it as an argument.
    ctx.obj = Settings.from_environment()


_Command = TypeVar("_Command", bound=Callable[..., Any])


def _store_options(command: _Command) -> _Command:
    """``--store URL`` and ``--namespace KEY=VALUE``: read runs by id from a trace store."""
    command = click.option("--namespace", "namespace", multiple=True, metavar="KEY=VALUE",
                           help="With --store: only runs filed under this namespace (repeat for several keys).")(command)
    return click.option("--store", "store", metavar="URL",
                        help="Read runs by id from a trace store: sqlite:///runs.db or postgresql://…")(command)
