"""The documentation site builds with no warning, every page is in its nav, no internal link is dead;
the README is the short page that points into it."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from tests.support.docs_site import DOCS, MKDOCS_YML, build_site, markdown_pages, nav_pages
from tests.support.paths import REPO

README = REPO / "README.md"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    build_site(folder)  # strict: mkdocs raises on the first build with a warning
    return folder


class _Page(HTMLParser):
    """The ids a page defines and the links (href/src) it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            elif name in ("href", "src") and value:
                self.links.append(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _nav() -> list:
    # mkdocs.yml has no custom tags; plain YAML reads it.
    return yaml.safe_load(MKDOCS_YML.read_text())["nav"]


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    in_nav = nav_pages(_nav())
    on_disk = sorted(p.relative_to(DOCS).as_posix() for p in markdown_pages())
    assert sorted(in_nav) == on_disk
    assert len(in_nav) == len(set(in_nav)), "a page is in the nav twice"


def test_the_reference_names_every_command_key_and_exported_name(site):
    import evalh_pipeline
    from evalh_pipeline.cli import main
    from evalh_pipeline.config.schema import EvalConfig
    from evalh_pipeline.models import EvalCase

    cli = (site / "reference" / "cli.html").read_text()
    assert [name for name in main.commands if f"evalh {name}" not in cli] == []
    eval_yaml = (site / "reference" / "eval-yaml.html").read_text()
    assert [key for key in EvalConfig.model_fields if f"<code>{key}</code>" not in eval_yaml] == []
    cases = (site / "reference" / "cases.html").read_text()
    assert [key for key in EvalCase.model_fields if f"<code>{key}</code>" not in cases] == []
    api = (site / "reference" / "api.html").read_text()
    assert [name for name in evalh_pipeline.__all__ if name != "__version__" and f'id="{_api_id(name)}"' not in api] == []


def _api_id(name: str) -> str:
    # mkdocstrings anchors each object by its path as written in the page (module.Name).
    import evalh_pipeline

    return f"{evalh_pipeline._EXPORTS[name]}.{name}"


def test_the_site_builds_and_holds_the_reference_generated_from_the_code(site):
    cli = (site / "reference" / "cli.html").read_text()
    assert "--dry-run" in cli and "--fail-on-gate" in cli and "evalh schema" in cli
    eval_yaml = (site / "reference" / "eval-yaml.html").read_text()
    assert "baseline_variant" in eval_yaml and "max_concurrency" in eval_yaml
    run_directory = (site / "reference" / "run-directory.html").read_text()
    assert "case_hash" in run_directory and "variant_hash" in run_directory
    api = (site / "reference" / "api.html").read_text()
    assert "open_run" in api and "load_eval" in api and "EvalhError" in api


def test_no_internal_link_of_the_site_is_dead(site):
    # 404.html is served for any missing path, so its links are root-absolute by design.
    pages = {path: _parse(path) for path in site.rglob("*.html") if path.name != "404.html"}
    dead = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("mailto:"):
                continue  # external: not this site's to check (and the build is offline)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                dead.append(f"{path.relative_to(site)}: {link} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    dead.append(f"{path.relative_to(site)}: {link} (no such anchor)")
    assert dead == []
    assert len(pages) > 20  # the check saw the whole site


def test_the_site_loads_nothing_from_the_network(site):
    # Offline: no web fonts, no analytics, no script or stylesheet from elsewhere.
    loaded = []
    for path in site.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        for needle in ("fonts.googleapis", "fonts.gstatic", "googletagmanager", "google-analytics"):
            if needle in text:
                loaded.append(f"{path.relative_to(site)}: {needle}")
        for tag in ('<script src="http', '<link rel="stylesheet" href="http', '<img src="http'):
            if tag in text:
                loaded.append(f"{path.relative_to(site)}: {tag}")
    assert loaded == []


def test_the_readme_is_short_and_its_links_and_images_resolve():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 150
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert "docs/getting-started.md" in targets and "docs/screenshots/run.png" in targets
    missing = [t for t in targets if not urlsplit(t).scheme and not (README.parent / t).exists()]
    assert missing == []
    # The two commands, as .ci/run runs the second.
    assert "./dev demo" in text and "./dev test" in text
    assert (README.parent / ".ci" / "run").read_text().rstrip().endswith("exec ./dev test")
