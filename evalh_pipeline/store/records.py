"""The record codec: how cases, traces and results are laid out as JSON lines.

Every layout fact here is derived from the pydantic models in ``evalh_pipeline.models``
(field order, types, defaults), so a field declared there reaches every reader and writer
without another edit. Readers and writers use the codecs below instead of spelling out
key orders or line patterns: :data:`CASES`, :data:`TRACES` and :data:`RESULTS`.

A trace line carries the hash of its own content (``trace_hash``, its last field): the
sha256 of the line without that field (:meth:`RecordCodec.content_hash`). Writers seal a
line with it (:meth:`RecordCodec.seal`); readers compute it again from the line, so a
trace edited by hand, or written before the field existed, has the hash of what it says.

Two fast paths keep large runs cheap and stay byte-identical to the models:

* :meth:`RecordCodec.encode_values` writes a line from values that are already exactly
  as the model would hold them, without validating a model first;
* :meth:`RecordCodec.read_fields` reads the first fields of a line (say, the variant of a
  trace) by parsing only its head (the fields a writer puts first), the whole line when
  they are not all there.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, create_model
from pydantic_core import from_json, to_json

from evalh_pipeline.models import EvalCase, EvaluationResult, Trace
from evalh_pipeline.models.versioning import SCHEMA_VERSION
from evalh_pipeline.store.jsonl import JsonlAppender, iter_raw_lines, parse_record

M = TypeVar("M", bound=BaseModel)

# The content of a JSON string without escapes; never crosses a line.
_PLAIN_STRING = rb'[^"\\\n]*'
# Bytes of a line's head :meth:`RecordCodec.read_fields` parses first: the leading fields
# (ids, names, the sample) of any record whose ids are not very long.
_HEAD_BYTES = 512


class RecordCodec(Generic[M]):
    """Encoding, decoding and line patterns of one persisted record type, from its model."""

    def __init__(self, model: type[M], kind: str, hash_field: str | None = None) -> None:
        self.model = model
        self.kind = kind
        #: The keys of a line, in the order the model (and so every writer) puts them.
        self.fields: tuple[str, ...] = tuple(model.model_fields)
        #: The field holding the hash of the rest of the line (the last field), if any.
        self.hash_field = hash_field
        if hash_field is not None and self.fields[-1] != hash_field:
            raise TypeError(f"{model.__name__}.{hash_field} must be the model's last field")
        # names -> (``,"first name":``, the pattern of the trailer they make): see _trailing_match.
        self._trailers: dict[tuple[str, ...], tuple[bytes, re.Pattern[bytes]]] = {}
        self._hash_key = to_json(hash_field) if hash_field is not None else b""
        # How a line the model wrote before it was sealed ends: its hash field null, last.
        self._unsealed = b"," + self._hash_key + b":null}"
        self._inf_nan = model.model_config.get("ser_json_inf_nan", "null")
        # How a line of the current schema starts (as the model writes it), and its validator.
        self._current = b'{"schema_version":' + to_json(SCHEMA_VERSION) + b","
        self._validate_json: Callable[[bytes], M] = model.__pydantic_validator__.validate_json
        self._views: dict[tuple[str, ...], type[BaseModel]] = {}  # projection models, by their fields
        # Every field in order, with its default when that is a plain value; the others
        # (required, or made by a factory) are filled in by encode_values.
        self._template: dict[str, Any] = {}
        self._unfilled: list[str] = []
        for name, info in model.model_fields.items():
            if info.is_required() or info.default_factory is not None:
                self._template[name] = None
                self._unfilled.append(name)
            else:
                self._template[name] = info.default

    # -- writing ---------------------------------------------------------------------

    def encode(self, record: M) -> bytes:
        """One line (with its newline) for ``record``."""
        return record.__pydantic_serializer__.to_json(record) + b"\n"

    def encode_values(self, values: Mapping[str, Any]) -> bytes:
        """The line ``encode(model(**values))`` would give, without building the model.

        Only for values already of the exact type the model holds (a ``bool`` for a bool
        field, a ``float`` for a float, an aware ``datetime``...): nothing is coerced or
        checked. A field missing from ``values`` takes the model's default; a missing
        required field is a ``KeyError``.
        """
        if len(values) == len(self.fields) and tuple(values) == self.fields:
            ordered = values  # every field, in the model's order already: nothing to merge
        else:
            ordered = {**self._template, **values}  # the template's key order, the caller's values
            for name in self._unfilled:
                if name not in values:
                    ordered[name] = self._default(name)
        return to_json(ordered, inf_nan_mode=self._inf_nan) + b"\n"

    def _default(self, name: str) -> Any:
        info = self.model.model_fields[name]
        if info.is_required():
            raise KeyError(f"{self.model.__name__}.{name} is required")
        return info.get_default(call_default_factory=True)

    def seal(self, line: bytes | str) -> tuple[bytes, str]:
        """``line`` (one JSON object, with or without its newline) with its hash field set to
        the hash of the rest of it, as the last key; and that hash."""
        raw = line.encode("utf-8") if isinstance(line, str) else line
        if raw.endswith(self._unsealed):
            # As the model writes a record not sealed yet (its hash field null, last): the
            # body is known without searching the line for the field.
            body = raw[:-len(self._unsealed)] + b"}"
        else:
            body = self._body(raw)
        digest = _digest(body)  # hex digits: a JSON string as they are
        sealed = b"".join((body[:-1], b"," if body != b"{}" else b"", self._hash_key, b':"', digest.encode(), b'"}\n'))
        return sealed, digest

    def content_hash(self, line: bytes | str) -> str:
        """The hash of ``line``'s content without its hash field: what :meth:`seal` wrote in it
        when nobody changed it since, else the hash of what it says now."""
        raw = line.encode("utf-8") if isinstance(line, str) else line
        return _digest(self._body(raw))

    def sealed_hash(self, line: bytes) -> str:
        """The hash :meth:`seal` wrote in ``line``, read off its end rather than computed
        again: only for a line known to be as this process sealed it (the lines its appender
        wrote, unchanged since); any other line's hash is :meth:`content_hash`'s."""
        assert self.hash_field is not None, f"{self.model.__name__} lines carry no hash"
        return self.trailing(line, self.hash_field)[0] or self.content_hash(line)

    def _body(self, raw: bytes) -> bytes:
        """The line without its hash field (and without surrounding whitespace)."""
        assert self.hash_field is not None, f"{self.model.__name__} lines carry no hash"
        raw = raw.strip()
        match = self._trailing_match(raw, (self.hash_field,))
        if match is not None:
            return raw[:match.start()] + b"}"
        if self._hash_key not in raw:
            return raw  # written before the field existed, or by another tool: the line as it is
        # The field elsewhere (keys reordered by a tool or a hand): the record without it.
        try:
            record = json.loads(raw)
        except ValueError:
            return raw
        if not isinstance(record, dict):
            return raw
        record.pop(self.hash_field, None)
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def trailing(self, line: bytes, *names: str) -> tuple[str | None, ...]:
        """The values of the str-or-null fields ``names`` (the model's last fields, in order)
        read off the end of ``line``; a line laid out another way is parsed."""
        match = self._trailing_match(line.rstrip(), names)
        if match is not None:
            return tuple(None if raw is None else raw.decode("utf-8") for raw in match.groups())
        record = json.loads(line)
        found = tuple(record.get(name) if isinstance(record, dict) else None for name in names)
        return tuple(value if isinstance(value, str) else None for value in found)

    def _trailing_match(self, line: bytes, names: tuple[str, ...]) -> re.Match[bytes] | None:
        """The match of ``names``' trailer at the end of ``line`` (found from its last key:
        no scan of the line from its start)."""
        needle, pattern = self._trailer(names)
        at = line.rfind(needle)
        return pattern.match(line, at) if at >= 0 else None

    def _trailer(self, names: tuple[str, ...]) -> tuple[bytes, re.Pattern[bytes]]:
        found = self._trailers.get(names)
        if found is None:
            if self.fields[-len(names):] != names:
                raise ValueError(f"{', '.join(names)} are not the last fields of {self.model.__name__}")
            parts = [re.escape(b"," + to_json(name) + b":") + b'(?:null|"(' + _PLAIN_STRING + b')")'
                     for name in names]
            found = self._trailers[names] = (b"," + to_json(names[0]) + b":", re.compile(b"".join(parts) + rb"\}$"))
        return found

    # -- reading ---------------------------------------------------------------------

    def decode(self, line: bytes | str, path: Path, number: int) -> M:
        """Line ``number`` of ``path`` as a validated record (older 1.x shapes migrated)."""
        raw = line.encode("utf-8") if isinstance(line, str) else line
        if raw.startswith(self._current):
            # A line of the current schema needs no migration: validated straight from its
            # JSON (the same record as parsing, then validating the dict; 40% fewer
            # instructions on a trace, 20% on a case).
            try:
                return self._validate_json(raw)
            except ValueError:
                pass  # decoded below, for its error message (or what only json.loads reads)
        return parse_record(line, self.model, self.kind, path, number)

    def iter_file(self, path: Path) -> Iterator[M]:
        """The validated records of a JSONL file; a torn tail is skipped."""
        for number, line in iter_raw_lines(path):
            yield self.decode(line, path, number)

    def projection(self, fields: Collection[str]) -> Callable[[bytes | str, Path, int], M]:
        """A decoder of lines into records that hold only ``fields``, each validated as the
        model validates it; for readers that need a few fields of large records.

        What it returns stands in for the model (``cast``): it has exactly those fields, and
        reading another one raises AttributeError. A line of an older schema version, or one
        the projection cannot read, is decoded whole (with :meth:`decode`'s errors) and
        projected.
        """
        key = tuple(sorted(fields))
        view = self._views.get(key)
        if view is None:
            unknown = set(key) - set(self.fields)
            if unknown:
                raise KeyError(f"{self.model.__name__} has no field {', '.join(sorted(unknown))}")
            view = create_model(  # type: ignore[call-overload]
                f"{self.model.__name__}Projection", __config__=ConfigDict(extra="ignore"),
                **{name: (self.model.model_fields[name].annotation, self.model.model_fields[name]) for name in key},
            )
            self._views[key] = view
        validate_json = view.__pydantic_validator__.validate_json  # the model's own, without its wrapper

        def decode(line: bytes | str, path: Path, number: int) -> M:
            raw = line.encode("utf-8") if isinstance(line, str) else line
            if raw.startswith(self._current):
                try:
                    return cast(M, validate_json(raw))
                except ValueError:
                    pass  # decoded whole below, for its migration or its error
            whole = self.decode(line, path, number)
            return cast(M, view.model_validate({name: getattr(whole, name) for name in key}))

        return decode

    def read_fields(self, line: bytes | str, *names: str) -> tuple[Any, ...]:
        """The values of the top-level fields ``names`` of a line (a field the line omits, as
        1.x writers omit the ones that came later, reads as its default).

        The line's head is parsed first, cut after a comma so that no number is cut short
        (an unfinished string or value is left out by the partial parse): the leading
        fields of a record are there. Whatever the head does not hold, the whole line gives.
        """
        raw = line.encode("utf-8") if isinstance(line, str) else line
        cut = raw.rfind(b",", 0, _HEAD_BYTES) + 1 if len(raw) > _HEAD_BYTES else 0
        if cut:
            try:
                head = from_json(raw[:cut], allow_partial=True)
            except ValueError:
                head = None  # not JSON from its start: the whole line says how
            if isinstance(head, dict) and all(name in head for name in names):
                return tuple(head[name] for name in names)
        try:
            record = from_json(raw)
        except ValueError:
            record = json.loads(raw)  # what the stricter parser refuses (a lone surrogate escape)
        return tuple(record[name] if name in record else self._default(name) for name in names)


def _digest(body: bytes) -> str:
    """The content hash of a line: 32 hex digits of its sha256."""
    return hashlib.sha256(body).hexdigest()[:32]


CASES: RecordCodec[EvalCase] = RecordCodec(EvalCase, "case")
TRACES: RecordCodec[Trace] = RecordCodec(Trace, "trace", hash_field="trace_hash")
RESULTS: RecordCodec[EvaluationResult] = RecordCodec(EvaluationResult, "result")


def traces_appender(path: Path) -> JsonlAppender:
    """An appender of trace lines that seals each with its ``trace_hash`` (:meth:`RecordCodec.seal`)
    and keeps the digest of the file's complete lines (what the later stages of the run compare)."""
    return JsonlAppender(path, seal=TRACES.seal, keep_digest=True)
