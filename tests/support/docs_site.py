"""The documentation site for tests: its config, its pages, its code blocks, a build into a folder."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import REPO

DOCS = REPO / "docs"
MKDOCS_YML = REPO / "mkdocs.yml"
# A fenced block's opening line: ```lang and its attributes (pymdownx.superfences: title="...").
_FENCE = re.compile(r'^(?P<indent> *)```(?P<lang>[\w-]*)(?P<attrs>[^\n`]*)$')
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')


@dataclass(frozen=True)
class CodeBlock:
    """One fenced code block of a Markdown page."""

    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    title: str | None
    text: str


def markdown_pages() -> list[Path]:
    """Every Markdown page of the site (docs/hooks holds code, not pages)."""
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)


def code_blocks(page: Path) -> Iterator[CodeBlock]:
    """The fenced code blocks of ``page``, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent = len(opening["indent"])
        body = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            body.append(lines[j][indent:])
            j += 1
        title = _TITLE.search(opening["attrs"])
        yield CodeBlock(page, i + 1, opening["lang"], title["title"] if title else None, "\n".join(body) + "\n")
        i = j + 1


def nav_pages(nav: list) -> list[str]:
    """The page paths of an mkdocs ``nav`` (nested sections flattened)."""
    found: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            found.extend(nav_pages(value))
        elif not re.match(r"^[a-z]+://", value):
            found.append(value)
    return found


def build_site(site_dir: Path) -> None:
    """Build the site into ``site_dir`` as `./dev docs` does (strict: a warning raises)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    config = load_config(config_file=str(MKDOCS_YML), site_dir=str(site_dir), strict=True)
    build(config)
