"""mkdocs hook: the reference pages' tables, rendered at build time from the pydantic models.

A page holds a marker where a table goes; the hook replaces it, so the reference can never
disagree with what loads:

- ``<!-- evalh:schema eval -->`` (or ``cases``, ``case``): every object of that JSON Schema
  (evalh_pipeline/config/json_schemas.py, the one `evalh schema` prints), one table each.
- ``<!-- evalh:model evalh_pipeline.models:Trace -->``: a pydantic model's JSON Schema, the same way.
- ``<!-- evalh:api -->``: one mkdocstrings block per name of ``evalh_pipeline.__all__``.

A marker naming something that does not exist fails the build (strict or not).
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

MARKER = re.compile(r"<!-- evalh:(schema|model) ([\w.:]+) -->")


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace each marker of the page with what it names."""
    markdown = _expand_api(markdown)
    return MARKER.sub(lambda m: render(_document(m.group(1), m.group(2))), markdown)


# Docstrings cite other objects with Sphinx roles (:func:`x`), which mkdocstrings leaves as text
# before the code span it renders: drop the role, keep the name.
_SPHINX_ROLE = re.compile(r":(?:func|class|meth|attr|mod|data|exc|obj):(?=<code>)")


def on_page_content(html: str, **_: Any) -> str:
    """Drop the Sphinx roles left before code spans in rendered docstrings."""
    return _SPHINX_ROLE.sub("", html)


def _document(kind: str, name: str) -> dict[str, Any]:
    if kind == "schema":
        from evalh_pipeline.config.json_schemas import KINDS, json_schema

        if name not in KINDS:
            raise ValueError(f"evalh:schema {name}: not one of {', '.join(KINDS)}")
        return json_schema(name)  # type: ignore[arg-type]
    module, _, attr = name.partition(":")
    model = getattr(importlib.import_module(module), attr)
    return model.model_json_schema()


def render(document: dict[str, Any]) -> str:
    """Markdown: the top object's table, then one per definition it refers to (anchored)."""
    definitions = document.get("$defs", {})
    parts = [_table(document)]
    for name in sorted(definitions):
        body = definitions[name]
        parts.append(f"#### {name} {{#{_anchor(name)}}}\n")
        if body.get("description"):
            parts.append(_one_paragraph(body["description"]) + "\n")
        parts.append(_table(body) if "properties" in body else f"`{_type(body)}`\n")
    return "\n".join(parts)


def _table(schema: dict[str, Any]) -> str:
    properties = schema.get("properties", {})
    if not properties:
        return "An object with any keys.\n"
    required = set(schema.get("required", []))
    described = any(prop.get("description") for prop in properties.values())
    rows = ["| key | type | required | default |" + (" description |" if described else ""),
            "|---|---|---|---|" + ("---|" if described else "")]
    for key, prop in properties.items():
        default = f"`{_cell(json.dumps(prop['default']))}`" if "default" in prop else ""
        description = f" {_cell(_one_paragraph(prop.get('description', '')))} |" if described else ""
        rows.append(f"| `{key}` | {_type(prop)} | {'yes' if key in required else ''} | {default} |{description}")
    extra = schema.get("additionalProperties")
    note = "\nOther keys: refused.\n" if extra is False else "\nOther keys: allowed (the plugin's own config model checks them).\n" \
        if extra is not None else ""
    return "\n".join(rows) + "\n" + note


def _type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    if "const" in prop:
        return f"`{_cell(json.dumps(prop['const']))}`"
    if "enum" in prop:
        return " \\| ".join(f"`{_cell(json.dumps(v))}`" for v in prop["enum"])
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in prop:
            return " or ".join(_type(p) for p in prop[combinator])
    kind = prop.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"map of {_type(prop['additionalProperties'])}"
    constraints = [f"{k} {prop[k]}" for k in ("minimum", "maximum", "exclusiveMinimum", "minLength", "maxLength")
                   if k in prop]
    return kind + (f" ({', '.join(constraints)})" if constraints else "")


def _anchor(name: str) -> str:
    return "def-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _one_paragraph(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


API_MARKER = "<!-- evalh:api -->"


def _expand_api(markdown: str) -> str:
    """Replace the API marker with one mkdocstrings block per name of ``evalh_pipeline.__all__``,
    under the module it is exported from (the package's own ``_EXPORTS`` map)."""
    import evalh_pipeline

    exports: dict[str, str] = evalh_pipeline._EXPORTS  # noqa: SLF001 (the package's own map of __all__)
    blocks = []
    for name in sorted(n for n in evalh_pipeline.__all__ if n != "__version__"):
        blocks.append(f"::: {exports[name]}.{name}\n    options:\n      heading_level: 3\n")
    return markdown.replace(API_MARKER, "\n".join(blocks))
