"""Checking YAML eval files and cases files against the JSON Schemas the package ships."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from evalh_pipeline.config.json_schemas import SchemaKind, json_schema
from evalh_pipeline.config.yaml_source import load_yaml


def schema_errors(data: Any, kind: SchemaKind) -> list[str]:
    """Every way ``data`` (a parsed eval.yaml or cases file) breaks the schema of ``kind``."""
    validator = jsonschema.Draft202012Validator(json_schema(kind))
    return [f"{'/'.join(map(str, error.absolute_path)) or '<top>'}: {error.message}"
            for error in validator.iter_errors(data)]


def file_kind(data: Any) -> SchemaKind:
    """An eval file has a top-level ``eval:``; a cases file a ``cases:`` list."""
    return "eval" if isinstance(data, dict) and "eval" in data else "cases"


def file_schema_errors(path: Path) -> list[str]:
    """``path`` read as evalh reads it (YAML 1.1 booleans for a cases file), checked against its schema."""
    data = load_yaml(path).data
    kind = file_kind(data)
    if kind == "cases":
        data = load_yaml(path, yaml11_booleans=True).data
    return schema_errors(data, kind)
