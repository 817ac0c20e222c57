"""``schema_match``: a trace field validates against a JSON Schema (the ``jsonschema`` library)."""

from __future__ import annotations

import json
import warnings
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError
from jsonschema_specifications import REGISTRY as METASCHEMAS
from pydantic import field_validator
from referencing.exceptions import Unresolvable

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, EvaluatorContext, SyncEvaluator, Verdict
from evalh_pipeline.common.fields import FieldPath, check_field_path
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

MAX_ERRORS = 20  # errors listed in detail; the count says how many there were
_MESSAGE_CHARS = 300  # jsonschema messages quote the offending value, which can be large

with warnings.catch_warnings():
    # The YAML key is `schema`, which shadows the deprecated BaseModel.schema() classmethod.
    # Naming the field otherwise (with an alias) would make "allowed keys" hints list the
    # Python name instead of the key users write; nothing here calls .schema().
    warnings.filterwarnings("ignore", message='Field name "schema"', category=UserWarning)

    class SchemaMatchConfig(EvaluatorConfigModel):
        schema: dict[str, Any]  # type: ignore[assignment]  # the key users write shadows pydantic's deprecated BaseModel.schema()
        field: str = "output.structured"
        # A string field holding JSON text is parsed before validation. Off by default: eval-harness
        # validates the value as it is (a JSON answer in final_answer is a string there).
        parse_json: bool = False

        @field_validator("schema")
        @classmethod
        def _valid_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
            # Checked against its own metaschema (the draft named by $schema, else the latest),
            # so a typo like `type: strng` is a load-time error rather than a failing trace.
            try:
                validators.validator_for(value).check_schema(value)
            except SchemaError as exc:
                raise ValueError(f"invalid JSON Schema at {exc.json_path}: {exc.message}") from None
            return value

        @field_validator("field")
        @classmethod
        def _parsable(cls, value: str) -> str:
            return check_field_path(value)


class SchemaMatch(SyncEvaluator[SchemaMatchConfig]):
    """Validates ``field`` (default ``output.structured``) against the inline ``schema``.

    A string field holding JSON (e.g. ``output.final_answer`` of a JSON-mode model) is parsed
    first. ``$ref`` resolves within the schema and to the JSON Schema metaschemas only:
    remote references are never fetched, so re-evaluation stays offline and deterministic.
    ``format`` is an annotation, not checked, as the JSON Schema drafts specify by default.
    """

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        self._validator = _build_validator(self.config.schema)
        self._path = FieldPath(self.config.field)

    def __getstate__(self) -> dict[str, Any]:
        # Judging workers get evaluators by pickle; the compiled validator is rebuilt there.
        return {**self.__dict__, "_validator": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._validator = _build_validator(self.config.schema)

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        missing = object()
        value = self._path.get(trace, missing)
        if value is missing:
            return Verdict(False, f"{cfg.field} is not present in the trace: nothing to validate",
                           score=0.0, detail={"field": cfg.field})
        # A field that is there but null is validated as null, as eval-harness does.
        if isinstance(value, str) and cfg.parse_json:
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                return Verdict(False, f"{cfg.field} is a string but not JSON ({exc})", score=0.0,
                               detail={"field": cfg.field, "parsed_from_string": True, "json_error": str(exc)})
            parsed = True
        else:
            parsed = False
        try:
            errors = list(self._validator.iter_errors(value))
        except Unresolvable as exc:
            raise ValueError(f"schema $ref cannot be resolved ({exc}): only references within the schema "
                             f"and to the JSON Schema metaschemas work; remote ones are never fetched") from None
        listed = [{"path": e.json_path, "message": _capped(e.message)} for e in errors[:MAX_ERRORS]]
        detail = {"field": cfg.field, "parsed_from_string": parsed, "error_count": len(errors),
                  "errors": listed, "errors_truncated": len(errors) > MAX_ERRORS}
        if not errors:
            return Verdict(True, f"{cfg.field} matches the schema", score=1.0, detail=detail)
        first = listed[0]
        more = f" (and {len(errors) - 1} more, see detail.errors)" if len(errors) > 1 else ""
        return Verdict(False, f"{cfg.field} does not match the schema: {first['path']}: {first['message']}{more}",
                       score=0.0, detail=detail)


def _capped(message: str) -> str:
    return message if len(message) <= _MESSAGE_CHARS else message[:_MESSAGE_CHARS] + "…"


def _build_validator(schema: dict[str, Any]) -> Any:
    return validators.validator_for(schema)(schema, registry=METASCHEMAS)
