"""Chromium pages for the viewer's browser tests: one browser per module, a fresh page per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.chromium import CHROMIUM, CHROMIUM_ARGS, browser_or_skip


@contextmanager
def launched_chromium() -> Iterator[Any]:
    """Debian's chromium, headless, until the block ends (or a skip when there is none).

    Launched once per module: each test opens its own context (``fresh_page``), which shares
    no cookies, storage or handlers with another test's, so nothing mutable crosses tests."""
    sync_playwright = browser_or_skip()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def fresh_page(browser: Any, log: Path, viewport: tuple[int, int] = (1400, 900)) -> Iterator[Any]:
    """A page in a new context of ``browser``; on a failure, its screenshot (beside ``log``) and
    text go with the error, since a CI log alone cannot say what the page showed."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        try:
            yield page
        except Exception as exc:
            shot = log.with_name(f"failure-{os.getpid()}-{id(exc)}.png")
            page.screenshot(path=str(shot), full_page=True)
            exc.add_note(f"screenshot: {shot}\npage text:\n{page.inner_text('body')[:3000]}")
            raise
    finally:
        context.close()


@dataclass
class Watched:
    """A chromium page and what it did besides: dialogs, script errors, requests."""

    page: Any
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def watch(page: Any, *, console_errors: bool = False) -> Watched:
    """Record ``page``'s dialogs (dismissed), uncaught script errors (with ``console_errors``,
    the console's errors too) and requests from now on."""
    seen = Watched(page)

    def on_dialog(dialog: Any) -> None:
        seen.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    if console_errors:
        page.on("console", lambda message: seen.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda exc: seen.errors.append(str(exc)))
    page.on("request", lambda request: seen.requests.append(request.url))
    return seen
