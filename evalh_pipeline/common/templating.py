"""``{{ ... }}`` templates: fields of a case rendered into config strings.

One syntax for every template key (http ``request_template``, cli ``stdin_template`` and
``command``, ``tool_called`` ``args_match``), a superset of eval-harness 2.0.2's:

- ``{{ case.<path> }}`` — a path into the case, read with
  :class:`~evalh_pipeline.common.fields.FieldPath` (``case.input.items[0]``,
  ``case.metadata.region``, ``case.id``, ``case.expected.facts.city``);
- ``{{ input }}`` / ``{{ input.<path> }}`` — the case's input (eval-harness);
- ``{{ case_id }}`` — the case's id (eval-harness);
- named placeholders a caller adds (``{{ case_json }}``);
- ``| json`` after any of them renders the value as JSON (a string gets its quotes and
  escapes, a missing value is ``null``), as in eval-harness.

Without ``| json``: strings render as they are, other values as JSON, a missing value as
empty text (or an error, for callers that ask for ``strict``). Rendering is a single pass,
so text coming from the case is never rendered again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from evalh_pipeline.errors import UserError
from evalh_pipeline.common.fields import FieldPath

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")
_EXPRESSION = re.compile(r"\s*(?P<expr>[^|]+?)\s*(?:\|\s*(?P<filter>[A-Za-z_]\w*)\s*)?")
_CASE_PATH = re.compile(r"case\.([\w.\[\]-]+)")
_INPUT_PATH = re.compile(r"input((?:\.[\w-]+|\[\d+\])*)")
_FILTERS = ("json",)
_MISSING = object()
# What an unknown placeholder error lists as allowed (plus the caller's names).
_FORMS = ("{{ case.<path> }}", "{{ input.<path> }}", "{{ case_id }}")


class MissingTemplateField(UserError, LookupError):
    """A template whose path the case does not have (only raised when rendering ``strict``)."""

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


def _parse(inner: str, names: tuple[str, ...] | Mapping[str, Any]) -> tuple[str, FieldPath | None, bool] | None:
    """(name, path, as_json) of one placeholder's inside; None when it is not a template we know.

    ``name`` is set for a caller's named placeholder (``path`` is then None).
    """
    match = _EXPRESSION.fullmatch(inner)
    if match is None:
        return None
    expr, flt = match.group("expr"), match.group("filter")
    if flt is not None and flt not in _FILTERS:
        return None
    as_json = flt == "json"
    if expr in names:
        return expr, None, as_json
    if expr == "case_id":
        return "", FieldPath("id"), as_json
    if (found := _INPUT_PATH.fullmatch(expr)) is not None:
        return "", FieldPath("input" + found.group(1)), as_json
    if (found := _CASE_PATH.fullmatch(expr)) is not None:
        return "", FieldPath(found.group(1)), as_json
    return None


def template_problems(text: str, names: tuple[str, ...] = ()) -> list[str]:
    """Placeholders in ``text`` that are not a known form (or use a filter other than ``json``)."""
    problems = []
    for match in _PLACEHOLDER.finditer(text):
        if _parse(match.group(1), names) is None:
            allowed = ", ".join([*_FORMS, *(f"{{{{ {n} }}}}" for n in names), "each optionally '| json'"])
            problems.append(f"unknown template {match.group(0)!r} (allowed: {allowed})")
    return problems


def _value(parsed: tuple[str, FieldPath | None, bool], case: Any, names: Mapping[str, Callable[[], Any]] | None,
           template: str, strict: bool) -> Any:
    name, path, _ = parsed
    if path is None:
        assert names is not None
        return names[name]()
    value = path.get(case, _MISSING)
    if value is _MISSING:
        if strict:
            raise MissingTemplateField(template)
        return None
    return value


def render_case_template(
    text: str,
    case: Any,
    *,
    names: Mapping[str, Callable[[], Any]] | None = None,
    strict: bool = True,
    to_text: Callable[[Any], str] = json_text,
) -> str:
    """``text`` with each template (see the module docstring) replaced.

    ``case`` is an EvalCase or its dict. A named placeholder's callable returns text (or,
    with ``| json``, the value to encode). A missing path raises :class:`MissingTemplateField`
    when ``strict``, else renders as empty (``null`` with ``| json``). Unknown placeholders
    are left as they are.
    """
    def one(match: re.Match[str]) -> str:
        parsed = _parse(match.group(1), names or ())
        if parsed is None:
            return match.group(0)
        value = _value(parsed, case, names, match.group(0), strict)
        if parsed[2]:
            return json.dumps(value, ensure_ascii=False)
        if value is None:  # missing or null: empty text, as in eval-harness
            return ""
        return value if parsed[1] is None and isinstance(value, str) else to_text(value)

    return _PLACEHOLDER.sub(one, text)


def render_structure(value: Any, case: Any, *, strict: bool = True, to_text: Callable[[Any], str] = json_text) -> Any:
    """``value`` with the templates of its string leaves rendered.

    A leaf that is exactly one template takes the value itself (a number stays a number,
    an object an object); other leaves render as text. Keys are never rendered. A missing
    path raises :class:`MissingTemplateField` when ``strict``, else renders as None / empty.
    """
    if isinstance(value, dict):
        return {k: render_structure(v, case, strict=strict, to_text=to_text) for k, v in value.items()}
    if isinstance(value, list):
        return [render_structure(v, case, strict=strict, to_text=to_text) for v in value]
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value.strip())
        if whole is not None:
            parsed = _parse(whole.group(1), ())
            if parsed is not None:
                return _value(parsed, case, None, value.strip(), strict)
        return render_case_template(value, case, strict=strict, to_text=to_text)
    return value
