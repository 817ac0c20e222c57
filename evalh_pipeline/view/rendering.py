"""Templates and their filters: every value from a run is text, escaped on the way out.

Jinja2's autoescape is always on (not chosen by file extension), so an answer, a tool
argument, a file name or a diff line is rendered as text whatever it contains. The only
markup not written by the templates themselves comes from Pygments, which escapes every
token it emits; no Markdown is rendered. Links are built here from ids with every
character outside ``A-Z a-z 0-9 _ . - ~`` percent-encoded, so an id can never become a
scheme, a host or another path.
"""

from __future__ import annotations

import difflib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import ChainableUndefined, Environment, FileSystemLoader
from markupsafe import Markup, escape

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"

# Longest text a page shows in full; longer texts are cut with a note (the run keeps them whole).
MAX_SHOWN_CHARS = 200_000
# Words (and the spaces between them) a word diff compares per side: matching is quadratic at
# worst, so a huge answer is compared on its start, with a note.
MAX_DIFF_TOKENS = 6_000
_TOKENS = re.compile(r"\s+|[^\s]+")


def part(value: Any) -> str:
    """One URL path segment from an id: every reserved character encoded."""
    return quote(str(value), safe="")


def case_href(run_id: str, case_id: str, **query: Any) -> str:
    """The cell page of a case. Ids a URL path cannot hold as a segment ("", ".", "..") go in the query."""
    params = {k: v for k, v in query.items() if v not in (None, "")}
    if case_id in ("", ".", ".."):
        return f"/runs/{part(run_id)}/case?{urlencode({'id': case_id, **params})}"
    return f"/runs/{part(run_id)}/cases/{part(case_id)}" + (f"?{urlencode(params)}" if params else "")


def compare_case_href(run_a: str, run_b: str, case_id: str, variant: str) -> str:
    """The side by side of one case of one variant in two runs."""
    return f"/compare/{part(run_a)}/{part(run_b)}/case?{urlencode({'id': case_id, 'variant': variant})}"


def pct(value: Any) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def pp(value: Any) -> str:
    return "–" if value is None else f"{round(value * 100, 1) + 0.0:+.1f} pp"


def interval(bounds: Any) -> str:
    if not bounds:
        return ""
    low, high = bounds
    return f"[{low * 100:.1f}%, {high * 100:.1f}%]"


def ci_pp(bounds: Any) -> str:
    if not bounds:
        return "–"
    low, high = bounds
    return f"[{low * 100:+.1f}, {high * 100:+.1f}] pp"


def p_value(value: Any) -> str:
    from evalh_pipeline.stats.paired import format_p_value

    return "–" if value is None else format_p_value(value)


def number(value: Any, digits: int = 1, unit: str = "") -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return "–"
    if isinstance(value, int):
        return f"{value:,}{unit}"
    return f"{value:,.{digits}f}{unit}"


def money(value: Any) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return "–"
    return f"${value:.6f}".rstrip("0").rstrip(".") if value else "$0"


def shown(value: Any) -> str:
    """Any value as text: strings as they are, anything else as indented JSON; cut when huge."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(text) > MAX_SHOWN_CHARS:
        return text[:MAX_SHOWN_CHARS] + f"\n… ({len(text) - MAX_SHOWN_CHARS:,} more characters not shown)"
    return text


def visible(value: Any) -> str:
    """:func:`shown`, with every control character (terminal escapes, bidi overrides, zero-width
    marks) written as a visible ``\\xNN`` escape: what a reviewer judges is the text as it is."""
    from evalh_pipeline.terminal import escape_control

    return escape_control(shown(value))


@lru_cache(maxsize=1)
def _formatter() -> Any:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass="hl", wrapcode=True)


def highlighted_diff(text: Any) -> Markup:
    """A unified diff, coloured by Pygments (which escapes every token)."""
    from pygments import highlight
    from pygments.lexers import DiffLexer

    return Markup(highlight(shown(text), DiffLexer(), _formatter()))  # noqa: S704 - Pygments escapes its tokens


def answer_diff(before: Any, after: Any, before_name: str, after_name: str) -> Markup:
    """The unified diff of two answers (or any two values), coloured."""
    lines = difflib.unified_diff(shown(before).splitlines(), shown(after).splitlines(),
                                 fromfile=before_name, tofile=after_name, lineterm="", n=3)
    text = "\n".join(lines) or "(the same)"
    return highlighted_diff(text)


def word_diff(before: Any, after: Any) -> Markup:
    """Two answers diffed word by word: removed words in ``<del>``, added in ``<ins>``, every word escaped."""
    old, new = _TOKENS.findall(shown(before)), _TOKENS.findall(shown(after))
    cut = len(old) > MAX_DIFF_TOKENS or len(new) > MAX_DIFF_TOKENS
    old, new = old[:MAX_DIFF_TOKENS], new[:MAX_DIFF_TOKENS]
    parts = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            parts.append(escape("".join(old[i1:i2])))
            continue
        if i2 > i1:
            parts.append(Markup("<del>%s</del>") % "".join(old[i1:i2]))
        if j2 > j1:
            parts.append(Markup("<ins>%s</ins>") % "".join(new[j1:j2]))
    if cut:
        parts.append(Markup('<span class="muted">\n… (compared on the first %s words and spaces of each)</span>')
                     % f"{MAX_DIFF_TOKENS:,}")
    return Markup('<pre class="word-diff">%s</pre>') % Markup("").join(parts)


def highlight_css() -> str:
    """The stylesheet of the Pygments classes (served as /static/highlight.css)."""
    return str(_formatter().get_style_defs(".hl"))


def status_of(results: list[dict[str, Any]], trace: dict[str, Any] | None) -> str:
    """pass / fail / error of one cell from its records (the page's badge; the matrix uses the SQL verdict)."""
    if trace is None:
        return "missing"
    if trace.get("error"):
        return "error"
    if not results:
        return "fail"
    return "pass" if all(r.get("passed") is True and not r.get("error") for r in results) else "fail"


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment of the viewer's templates (autoescape always on)."""
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=ChainableUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(pct=pct, pp=pp, interval=interval, ci_pp=ci_pp, p_value=p_value, number=number,
                       money=money, shown=shown, visible=visible, diff=highlighted_diff, part=part)
    env.globals.update(case_href=case_href, compare_case_href=compare_case_href, answer_diff=answer_diff,
                       word_diff=word_diff,
                       status_of=status_of)
    return env


def preload() -> None:
    """Compile every template now, so the first page served does not pay for it."""
    for path in TEMPLATES.glob("*.html"):
        environment().get_template(path.name)


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
