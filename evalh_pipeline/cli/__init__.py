"""`evalh`: run and re-evaluate evals from a terminal or CI; compare and inspect runs.

Commands that produce data go through the Dagster assets and the local instance, so the
UI shows what the CLI did; Dagster is imported only by those commands. The read-only
commands (`compare`, `drift`, `inspect`) read run directories directly and never import it;
`compare` and `drift` import only click, DuckDB and the query modules (every other import
in this package is deferred to the command that needs it), so they start in a fraction of a
second.

One module per command family, each adding its commands to the group ``main``:
group (the group, exit codes, shared options), shared (load an eval, locate a run, hold its
lock), running (run, re-evaluate, retry-failed), comparing (compare, drift, promote),
stores (runs), inspecting (inspect), labelling (label), planning (plan), viewing (view),
schemas (schema), importing (import).
"""

from evalh_pipeline.cli.group import console_main, main
from evalh_pipeline.cli import comparing, importing, inspecting, labelling, planning, running, schemas, stores, viewing  # noqa: F401 - importing registers their commands

__all__ = ["console_main", "main"]
