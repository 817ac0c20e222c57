"""Schema versions of persisted records and migration on read.

Every persisted type carries ``schema_version``. Within major 1 only additive changes
are allowed, so a 1.x record from an older (or newer) writer loads as it is; a record
of another major is refused with an error that says what to do.
"""

from __future__ import annotations

from typing import Any, Callable

from evalh_pipeline.errors import UserError

SCHEMA_VERSION = "1.0"
SUPPORTED_MAJOR = 1


class SchemaVersionError(UserError, ValueError):
    """A persisted record has a schema major version this release cannot read."""


# (kind, from_version) -> function upgrading a raw dict by one step. Empty while 1.0 is the
# only version ever written; a future 1.1 that renames nothing needs no entry either.
_MIGRATIONS: dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]] = {}


def check_major(version: Any, *, what: str) -> None:
    """Raise :class:`SchemaVersionError` unless ``version`` is a 1.x version string."""
    text = str(version if version is not None else SCHEMA_VERSION)
    major = text.split(".", 1)[0]
    if major != str(SUPPORTED_MAJOR):
        raise SchemaVersionError(
            f"{what} has schema_version {text!r}; this evalh_pipeline reads {SUPPORTED_MAJOR}.x only. "
            "Upgrade evalh_pipeline, or migrate the file with the release that wrote it."
        )


def migrate(kind: str, record: dict[str, Any], *, what: str) -> dict[str, Any]:
    """Upgrade a raw persisted record of ``kind`` to the current 1.x shape, in place."""
    version = str(record.get("schema_version", SCHEMA_VERSION))
    check_major(version, what=what)
    while (step := _MIGRATIONS.get((kind, version))) is not None:
        record = step(record)
        version = str(record["schema_version"])
    return record
