"""Debian's chromium driven by Playwright's sync API, for every browser test (never `playwright install`;
../shared/design/real-components.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("EVALH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--disable-gpu", "--disable-dev-shm-usage"]


def browser_or_skip() -> Any:
    """Playwright's sync API, or a loud skip (a failure when EVALH_REQUIRE_BROWSER=1, as in CI)."""
    reason = ""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "the `playwright` package is not installed (pip install -e '.[dev]')"
    if not reason and not CHROMIUM.exists():
        reason = f"no browser at {CHROMIUM}: `apt-get install chromium` (./dev test does it when run as root)"
    if reason:
        if os.environ.get("EVALH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser test required but cannot run: {reason}")
        pytest.skip(f"BROWSER TEST NOT RUN: {reason}")
    return sync_playwright
