"""The JSON Schemas of eval.yaml, of a cases file and of one dataset row, from the models that load them.

Generated from the pydantic models (config/schema.py's EvalConfig, models/case.py's EvalCase),
so they never drift from what loads; the same documents ship with the package under
``evalh_pipeline/config/schemas/`` (tests/config/test_json_schemas.py checks they are equal) for
editors: ``# yaml-language-server: $schema=<path>`` on the first line of an eval file. Plugin
configs (a system's adapter keys, an evaluator's ``config``) are open objects here: their own
config models check them when the eval loads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

SchemaKind = Literal["eval", "cases", "case"]
KINDS: tuple[SchemaKind, ...] = ("eval", "cases", "case")
DIALECT = "https://json-schema.org/draft/2020-12/schema"
SHIPPED_DIR = Path(__file__).resolve().parent / "schemas"


def shipped_schema_path(kind: SchemaKind) -> Path:
    """Where the package ships the schema of ``kind`` (``eval.schema.json`` and the like)."""
    return SHIPPED_DIR / f"{kind}.schema.json"


def json_schema(kind: SchemaKind) -> dict[str, Any]:
    """The JSON Schema of ``kind``: ``eval`` (an eval.yaml), ``cases`` (a YAML cases file with
    its ``cases:`` list) or ``case`` (one dataset row: a JSONL line, one entry of ``cases:``)."""
    if kind == "eval":
        from evalh_pipeline.config.schema import EvalConfig

        document = EvalConfig.model_json_schema()
        # eval-harness accepts one `output` mapping as well as a list (EvalConfig._single_output).
        listed = document["properties"]["output"]
        document["properties"]["output"] = {
            **{k: v for k, v in listed.items() if k not in ("type", "items")},
            "anyOf": [{"type": "array", "items": listed["items"]}, listed["items"]],
        }
        return {"$schema": DIALECT, **document}
    from evalh_pipeline.models import EvalCase

    row = EvalCase.model_json_schema()
    if kind == "case":
        return {"$schema": DIALECT, **row}
    definitions = row.pop("$defs", {})
    return {
        "$schema": DIALECT,
        "title": "Cases file",
        "description": "A YAML dataset: its `cases:` list, one dataset row each.",
        "type": "object",
        "properties": {
            "schema_version": {"type": ["string", "number"], "default": "1.0"},
            "cases": {"type": "array", "items": {"$ref": "#/$defs/EvalCase"}},
        },
        "required": ["cases"],
        "$defs": {**definitions, "EvalCase": row},
    }


def schema_text(kind: SchemaKind) -> str:
    """``json_schema(kind)`` as the shipped file holds it (indented, sorted as generated, newline-ended)."""
    return json.dumps(json_schema(kind), indent=2, ensure_ascii=False) + "\n"


def write_shipped_schemas() -> list[Path]:
    """Rewrite the shipped schema files from the models (after a model changes); returns them."""
    paths = []
    for kind in KINDS:
        path = shipped_schema_path(kind)
        path.write_text(schema_text(kind), encoding="utf-8")
        paths.append(path)
    return paths
