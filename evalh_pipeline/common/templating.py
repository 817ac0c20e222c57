"""``{{ case.<path> }}`` templates: fields of a case rendered into config strings.

The same syntax as ``tool_called``'s ``args_match``: the path is read with
:class:`~evalh_pipeline.common.fields.FieldPath` (``{{ case.input.question }}``,
``{{ case.input.items[0] }}``). Callers may add named placeholders (``{{ case_json }}``).
Rendering is a single pass, so text coming from the case is never rendered again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from evalh_pipeline.common.fields import FieldPath

CASE_TEMPLATE = re.compile(r"\{\{\s*case\.([\w.\[\]]+)\s*\}\}")
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")
_CASE_PATH = re.compile(r"case\.([\w.\[\]]+)")
_MISSING = object()


class MissingTemplateField(LookupError):
    """A ``{{ case.<path> }}`` whose path the case does not have."""

    def __init__(self, template: str) -> None:
        super().__init__(template)
        self.template = template


def json_text(value: Any) -> str:
    """Text of a rendered value: strings as they are, None empty, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def template_problems(text: str, names: tuple[str, ...] = ()) -> list[str]:
    """Placeholders in ``text`` that are neither ``case.<path>`` nor one of ``names``."""
    problems = []
    for match in _PLACEHOLDER.finditer(text):
        inner = match.group(1).strip()
        if inner in names:
            continue
        path = _CASE_PATH.fullmatch(inner)
        if path is None:
            allowed = ", ".join(["{{ case.<path> }}", *(f"{{{{ {n} }}}}" for n in names)])
            problems.append(f"unknown template {match.group(0)!r} (allowed: {allowed})")
    return problems


def render_case_template(
    text: str,
    case: Any,
    *,
    names: Mapping[str, Callable[[], str]] | None = None,
    strict: bool = True,
    to_text: Callable[[Any], str] = json_text,
) -> str:
    """``text`` with each ``{{ case.<path> }}`` (and each named placeholder) replaced.

    ``case`` is an EvalCase or its dict. A missing path raises :class:`MissingTemplateField`
    when ``strict``, else renders as empty. Unknown placeholders are left as they are.
    """
    def one(match: re.Match[str]) -> str:
        inner = match.group(1).strip()
        if names and inner in names:
            return names[inner]()
        path = _CASE_PATH.fullmatch(inner)
        if path is None:
            return match.group(0)
        value = FieldPath(path.group(1)).get(case, _MISSING)
        if value is _MISSING:
            if strict:
                raise MissingTemplateField(match.group(0))
            value = None
        return to_text(value)

    return _PLACEHOLDER.sub(one, text)


def render_structure(value: Any, case: Any, *, strict: bool = True, to_text: Callable[[Any], str] = json_text) -> Any:
    """``value`` with the ``{{ case.<path> }}`` templates of its string leaves rendered.

    A leaf that is exactly one template takes the value itself (a number stays a number,
    an object an object); other leaves render as text. Keys are never rendered. A missing
    path raises :class:`MissingTemplateField` when ``strict``, else renders as None / empty.
    """
    if isinstance(value, dict):
        return {k: render_structure(v, case, strict=strict, to_text=to_text) for k, v in value.items()}
    if isinstance(value, list):
        return [render_structure(v, case, strict=strict, to_text=to_text) for v in value]
    if isinstance(value, str):
        whole = CASE_TEMPLATE.fullmatch(value.strip())
        if whole is not None:
            found = FieldPath(whole.group(1)).get(case, _MISSING)
            if found is _MISSING:
                if strict:
                    raise MissingTemplateField(value.strip())
                return None
            return found
        return render_case_template(value, case, strict=strict, to_text=to_text)
    return value
