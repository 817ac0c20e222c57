"""Whatever text a system puts in a trace, the templates emit it as text (property-based).

Each value carries markers the templates never contain (``<zq``, ``"zq``): ``<zq`` must come
out escaped wherever the value lands (element text, diff, case link), and no tag or
attribute may be made of a trace's text (ids reach attributes only as percent-encoded links).
"""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from evalh_pipeline.view.rendering import render

texts = st.text(min_size=0, max_size=40)


def _column(text: str) -> dict:
    trace = {"case_id": text, "variant_name": text, "latency_ms": 3,
             "output": {"final_answer": "<zq" + text, "thinking": '"zq' + text, "structured": {text: "<zq"}},
             "messages": [{"role": text, "content": "<zq" + text, "thinking": text,
                           "tool_call": {"name": "<zq", "arguments": {"<zq": text}}}],
             "metrics": {"token_input": 1}, "error": {"type": "<zq", "message": text, "stack": "<zq" + text},
             "extra": {"<zq": text}}
    results = [{"evaluator": "<zq" + text, "evaluator_type": text, "passed": False, "score": 0.5,
                "reason": '"zq<zq' + text, "detail": {"stdout": "<zq", "stderr": text, "rationale": "<zq"},
                "error": {"type": "<zq", "message": text}}]
    artifact = {"diff": {"added": ["<zq" + text], "modified": ['"zq'], "removed": [text],
                         "text_diffs": {"<zq" + text: "--- a/<zq\n+++ b/<zq\n@@ -1 +1 @@\n-<zq" + text + "\n+\"zq\n"}}}
    return {"variant": "<zq" + text, "sample": 0, "trace": trace, "tools": [("<zq", {"q": text}, "<zq" + text)],
            "results": results, "artifact": artifact}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def _tags(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


@settings(max_examples=60, deadline=None)
@given(texts)
def test_a_cell_page_never_emits_a_traces_text_as_markup(text):
    html = render("case.html", title="<zq" + text, run_id="r", case_id="<zq" + text,
                  case={"input": {"<zq": text}, "expected": '"zq', "metadata": {text: "<zq"}},
                  first={"input": text}, columns=[_column(text)], diffs=[("<zq" + text, '"zq')],
                  answers={"<zq" + text: "<zq" + text, '"zq': '"zq' + text})
    assert "<zq" not in html and "&lt;zq" in html
    tags = _tags(html)
    assert not any(name.startswith("zq") for name, _ in tags)
    for name, attributes in tags:
        for key, value in attributes:
            assert "zq" not in key
            # A value from the trace reaches an attribute only as an encoded path of a link here.
            assert "zq" not in (value or "") or (key == "href" and value.startswith("/")), (name, key, value)


@settings(max_examples=60, deadline=None)
@given(texts)
def test_a_case_link_is_one_encoded_path_segment(text):
    from evalh_pipeline.view.rendering import case_href

    href = case_href("run", "<zq" + text + '"zq')
    assert href.startswith("/runs/run/case") and "<" not in href and '"' not in href and "#" not in href
    assert href.count("/") == 4 if not href.startswith("/runs/run/case?") else href.count("/") == 3
