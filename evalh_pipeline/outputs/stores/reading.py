"""Reading runs back from a store for the read-only commands (``--store URL --namespace k=v``).

A store URL is ``sqlite:///relative/runs.db`` (``sqlite:////abs/runs.db``), or a
``postgresql://`` / ``postgres://`` DSN or a libpq ``key=value`` string (``host=db
dbname=evals``, as ``dsn:`` accepts), with ``#schema=NAME`` when the store's ``schema:``
is not ``public``. Errors never show a password. The run is written into a fresh local folder under
``<cache_dir>/stores/`` ($EVALH_CACHE_DIR, read by the CLI; never into a run directory the engine may be writing), and the
commands read that folder as they read any run directory.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from evalh_pipeline.outputs.stores.base import ReadableStore, StoreContext, StoreError


# A libpq connection string starts with a keyword and `=` (`host=db user=evalh ...`).
_KEYWORD_DSN = re.compile(r"^\s*[A-Za-z_]+\s*=")
_SCHEMA_FRAGMENT = re.compile(r"#(?P<fragment>[^#\s'=]+=[^#\s']*(?:&[^#\s'=]+=[^#\s']*)*)$")


def is_store_url(value: str) -> bool:
    return value.startswith(("sqlite:///", "postgresql://", "postgres://")) or bool(_KEYWORD_DSN.match(value))


def store_from_url(url: str) -> ReadableStore:
    """The store a URL names (unopened); raises ValueError for anything else."""
    context = StoreContext(eval_dir=Path.cwd())
    if url.startswith("sqlite:///"):
        from evalh_pipeline.outputs.stores.sqlite import SqliteStore

        path = url.removeprefix("sqlite:///")
        if not Path(path).expanduser().is_file():
            raise StoreError(f"no SQLite store at {Path(path).expanduser().resolve()}")
        return SqliteStore({"type": "sqlite", "path": str(Path(path).expanduser().resolve())}, context)
    if url.startswith(("postgresql://", "postgres://")) or _KEYWORD_DSN.match(url):
        from evalh_pipeline.outputs.stores.postgres import PostgresStore

        # `#schema=NAME` at the end; a `#` inside a quoted keyword password is the password's.
        fragment = _SCHEMA_FRAGMENT.search(url)
        dsn = url[:fragment.start()] if fragment else url
        config = {"type": "postgres", "dsn": dsn}
        for pair in fragment.group("fragment").split("&") if fragment else ():
            key, _, value = pair.partition("=")
            if key != "schema":
                raise ValueError(f"--store: unknown #{key} (only #schema=NAME names the tables' schema)")
            config["schema"] = value
        try:
            return PostgresStore(config, context)
        except ValidationError as exc:  # its text quotes the input: the DSN, password and all
            from evalh_pipeline.outputs.stores.postgres import redact_dsn

            problems = "; ".join(str(err["msg"]) for err in exc.errors())
            raise ValueError(f"--store {redact_dsn(url)!r}: {problems}") from None
    from evalh_pipeline.outputs.stores.postgres import redact_dsn

    raise ValueError(f"--store {redact_dsn(url)!r}: use sqlite:///path/to/runs.db, a postgresql:// URL or a "
                     "libpq connection string (host=… dbname=…) (a runs folder is read by passing runs/<run_id>)")


def fetch_from_store(url: str, run_id: str, namespace: Mapping[str, str] | None, cache_dir: Path) -> Path:
    """A fresh local run directory of ``run_id`` read from the store at ``url``.

    Raises LookupError when the store has no such run (in ``namespace``).
    """
    from evalh_pipeline.store.run_dir import RUN_ID_PATTERN

    if not RUN_ID_PATTERN.match(run_id):
        raise ValueError(f"invalid run id {run_id!r}: letters, digits, '_', '-' and '.' only")
    store = store_from_url(url)
    try:
        scope = "&".join(f"{k}={v}" for k, v in sorted((namespace or {}).items()))
        base = cache_dir / "stores" / hashlib.sha256(f"{url}?{scope}".encode()).hexdigest()[:16]
        base.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=base))
        final = base / run_id
        try:
            store.export_run(run_id, staging / "run", namespace)
            shutil.rmtree(final, ignore_errors=True)
            os.rename(staging / "run", final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return final
    finally:
        store.close()
