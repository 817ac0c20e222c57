"""Fixtures of the viewer's browser tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser_page import launched_chromium


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless chromium per test module; each test opens a fresh context on it."""
    with launched_chromium() as browser:
        yield browser
