"""`evalh schema`: the JSON Schema of eval.yaml, of a cases file or of a dataset row, for editors and CI.

Generated from the pydantic models that validate the files (config/json_schemas.py), so it never
drifts from what loads; the package ships the same documents, whose path ``--path`` prints (for a
``# yaml-language-server: $schema=<path>`` line). Plugin configs (a system's adapter keys, an
evaluator's ``config``) are open objects there: their own config models check them when the eval
loads.
"""

from __future__ import annotations

from typing import cast

import click

from evalh_pipeline.cli.group import main


@main.command("schema")
@click.argument("kind", type=click.Choice(["eval", "cases", "case"]))
@click.option("--path", "print_path", is_flag=True,
              help="Print the path of the schema file shipped with the package instead of the schema.")
def schema(kind: str, print_path: bool) -> None:
    """Print the JSON Schema of KIND: `eval` (eval.yaml), `cases` (a YAML cases file: its
    `cases:` list) or `case` (one dataset row: a JSONL line, an entry of `cases:`)."""
    from evalh_pipeline.config.json_schemas import SchemaKind, schema_text, shipped_schema_path

    chosen = cast(SchemaKind, kind)  # click.Choice has refused anything else
    if print_path:
        click.echo(str(shipped_schema_path(chosen)))
    else:
        click.echo(schema_text(chosen), nl=False)
