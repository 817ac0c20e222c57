"""`evalh schema`: the JSON Schema of eval.yaml or of a dataset row, for editors and CI checks.

Generated from the pydantic models that validate the files (config/schema.py's EvalConfig,
models/case.py's EvalCase), so it never drifts from what loads. Plugin configs (a system's
adapter keys, an evaluator's ``config``) are open objects there: their own config models
check them when the eval loads.
"""

from __future__ import annotations

import json

import click

from evalh_pipeline.cli.group import main


@main.command("schema")
@click.argument("kind", type=click.Choice(["eval", "case"]))
def schema(kind: str) -> None:
    """Print the JSON Schema of KIND: `eval` (eval.yaml) or `case` (one dataset row: a JSONL
    line, an entry of a YAML dataset's `cases:`)."""
    if kind == "eval":
        from evalh_pipeline.config.schema import EvalConfig

        document = EvalConfig.model_json_schema()
    else:
        from evalh_pipeline.models import EvalCase

        document = EvalCase.model_json_schema()
    click.echo(json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", **document}, indent=2))
