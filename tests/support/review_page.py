"""The answer form of the viewer's review page, read as a browser would send it."""

from __future__ import annotations

import re


def review_form(page: str) -> dict[str, str]:
    """The hidden fields of the review page's answer form (token, cell, view)."""
    form = page[page.index('<form class="review"'):]
    form = form[:form.index("</form>")]
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))
