"""promptfoo's Nunjucks ``{{ var }}`` templates, mapped to evalh's ``{{ input.vars.<var> }}``.

promptfoo renders prompts (and assertion values) with Nunjucks over the test's ``vars``. The
imported case keeps those vars under ``input.vars``, so a plain variable or a path into one
(``{{ name }}``, ``{{ doc.title }}``, ``{{ items[0] }}``) maps to evalh's templating
(common/templating.py), and ``| dump`` to its ``| json``. Other Nunjucks constructs (tags
``{% %}``, comments ``{# #}``, other filters, expressions) have no counterpart: they are
returned as problems, for the import report.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_VARIABLE = re.compile(r"\s*(?P<path>[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\d+\])*)\s*(?:\|\s*(?P<filter>\w+)\s*)?")
_TAG = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.DOTALL)
# Nunjucks filters that leave a value as promptfoo's rendering would with evalh's: `dump`
# (JSON.stringify) is `| json`; `safe` only turns off HTML escaping, which promptfoo turns off anyway.
_FILTERS = {"dump": " | json", "safe": "", None: ""}
_MISSING = object()


def has_template(text: Any) -> bool:
    """Whether ``text`` is a string with a Nunjucks placeholder, tag or comment."""
    return isinstance(text, str) and ("{{" in text or "{%" in text or "{#" in text)


def to_evalh(text: str, prefix: str = "input.vars") -> tuple[str, list[str]]:
    """``text`` with each promptfoo variable rewritten as an evalh placeholder, and the
    constructs that do not map (left as they are in the text)."""
    problems = [f"Nunjucks tag {m.group(0)[:40]!r}" for m in _TAG.finditer(text)]

    def rewrite(match: re.Match[str]) -> str:
        found = _VARIABLE.fullmatch(match.group(1))
        if found is None or found.group("filter") not in _FILTERS:
            problems.append(f"Nunjucks expression {match.group(0)[:60]!r}")
            return match.group(0)
        return f"{{{{ {prefix}.{found.group('path')}{_FILTERS[found.group('filter')]} }}}}"

    return _PLACEHOLDER.sub(rewrite, text), problems


def render(text: str, variables: dict[str, Any]) -> tuple[str, list[str]]:
    """``text`` rendered with ``variables`` as promptfoo would for the forms :func:`to_evalh`
    maps (a missing variable renders empty, a non-string as JSON), and the problems met."""
    problems = [f"Nunjucks tag {m.group(0)[:40]!r}" for m in _TAG.finditer(text)]

    def value_of(match: re.Match[str]) -> str:
        found = _VARIABLE.fullmatch(match.group(1))
        if found is None or found.group("filter") not in _FILTERS:
            problems.append(f"Nunjucks expression {match.group(0)[:60]!r}")
            return match.group(0)
        value: Any = variables
        for part in re.findall(r"[^.\[\]]+|\[\d+\]", found.group("path")):
            if part.startswith("["):
                index = int(part[1:-1])
                value = value[index] if isinstance(value, list) and index < len(value) else _MISSING
            else:
                value = value.get(part, _MISSING) if isinstance(value, dict) else _MISSING
            if value is _MISSING:
                return ""
        if isinstance(value, str) and found.group("filter") != "dump":
            return value
        if value is None:
            return ""
        return json.dumps(value, ensure_ascii=False)

    return _PLACEHOLDER.sub(value_of, text), problems
