"""The ``http`` enricher over the project's HTTP client, against raw servers on 127.0.0.1:
errors are recorded on the trace as one line (status without the query string, timeouts
and refused connections by their names), secrets masked, redirects never followed, a 404
retried until the ingestion wait ends."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from evalh_pipeline.enrichers.base import EnricherContext, build_enrichers, enrich_trace
from evalh_pipeline.models import EvalCase, Trace
from tests.support.http_server import free_port, serve_http

pytestmark = pytest.mark.integration

SECRET = "s3cret-token"


def _response(status: str, body: bytes = b"", headers: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{headers}"
            "Content-Type: application/json\r\n\r\n").encode() + body


def _trace() -> Trace:
    now = datetime.now(timezone.utc)
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=now, finished_at=now, latency_ms=0,
                 output={"final_answer": "kept"}, extra={"trace_id": "up 1"})


async def _enrich(config: dict[str, Any], trace: Trace) -> None:
    """``trace`` through a chain of one ``http`` enricher, started and closed as the runner does."""
    context = EnricherContext(eval_dir=Path("."), secret_values=frozenset({SECRET}))
    [enricher] = build_enrichers([{"type": "http", **config}], context)
    await enricher.start()
    try:
        await enrich_trace([enricher], EvalCase(id="c1", input={}), trace)
    finally:
        await enricher.close()


def _errors(trace: Trace) -> list[str]:
    return [e["error"] for e in trace.extra.get("enrichment_errors", [])]


def _run(answer, config: dict[str, Any]) -> tuple[Trace, list[str]]:
    """One trace enriched against a server answering ``answer``; ``URL`` in the config's
    url is the server's address. The trace and the request heads the server saw."""
    seen: list[str] = []
    trace = _trace()

    def recording(head: str) -> bytes | None:
        seen.append(head)
        return answer(head.split(" ", 2)[1])

    async def go() -> None:
        server, url = await serve_http(recording)
        async with server:
            await _enrich({**config, "url": config["url"].replace("URL", url)}, trace)

    asyncio.run(go())
    return trace, seen


def test_fields_of_the_upstream_document_are_merged_and_the_header_reaches_the_service():
    body = json.dumps({"usage": {"input": 111}, "latency": 0.5}).encode()
    trace, seen = _run(lambda path: _response("200 OK", body), {
        "url": "URL/api/traces/{{ trace.extra.trace_id }}",
        "headers": {"authorization": f"Bearer {SECRET}"},
        "merge": {"metrics.token_input": "$.usage.input", "extra.upstream_latency_s": "$.latency"}})
    assert _errors(trace) == []
    assert trace.metrics.token_input == 111 and trace.extra["upstream_latency_s"] == 0.5
    assert seen[0].startswith("GET /api/traces/up%201 HTTP/1.1")
    assert f"\r\nauthorization: Bearer {SECRET}\r\n" in seen[0]


def test_an_error_status_is_one_line_without_the_query_string_and_the_trace_is_unchanged():
    trace, _ = _run(lambda path: _response("500 Internal Server Error"), {
        "url": f"URL/api/traces/{{{{ trace.extra.trace_id }}}}?api_key={SECRET}",
        "merge": {"metrics.token_input": "$.usage.input"}})
    [error] = _errors(trace)
    assert error.startswith("RuntimeError: HTTP 500 from http://127.0.0.1:")
    assert error.endswith("/api/traces/up%201") and SECRET not in error and "\n" not in error
    assert trace.metrics.token_input is None and trace.output.final_answer == "kept"


def test_a_secret_in_an_error_message_is_masked():
    # The secret is in the path (not only the query): the recorded error masks it.
    trace, _ = _run(lambda path: _response("403 Forbidden"), {"url": f"URL/{SECRET}/traces"})
    [error] = _errors(trace)
    assert error.startswith("RuntimeError: HTTP 403 from ") and "***" in error and SECRET not in error


def test_a_redirect_is_not_followed():
    def answer(path: str) -> bytes:
        return _response("302 Found", headers="Location: /elsewhere\r\n") if path != "/elsewhere" else _response(
            "200 OK", b'{"usage": {"input": 5}}')

    trace, seen = _run(answer, {"url": "URL/first", "merge": {"metrics.token_input": "$.usage.input"}})
    assert [head.split(" ", 2)[1] for head in seen] == ["/first"]
    [error] = _errors(trace)
    assert error.startswith("JSONDecodeError: ")  # the empty body of the 302 is not JSON
    assert trace.metrics.token_input is None


def test_a_404_is_retried_until_the_ingestion_wait_ends_then_merged():
    answers = iter([_response("404 Not Found"), _response("200 OK", b'{"usage": {"input": 7}}')])
    trace, seen = _run(lambda path: next(answers), {
        "url": "URL/t", "wait_for_ingestion_seconds": 600, "merge": {"metrics.token_input": "$.usage.input"}})
    assert _errors(trace) == [] and trace.metrics.token_input == 7 and len(seen) == 2


def test_a_service_that_never_answers_is_a_read_timeout():
    trace, _ = _run(lambda path: None, {"url": "URL/t", "timeout_seconds": 0.2})
    [error] = _errors(trace)
    assert error.split(":", 1)[0] == "ReadTimeout"


def test_a_refused_connection_is_a_connect_error():
    trace = _trace()
    asyncio.run(_enrich({"url": f"http://127.0.0.1:{free_port()}/t"}, trace))
    [error] = _errors(trace)
    assert error.startswith("ConnectError: ") and "\n" not in error


def test_an_answer_that_is_not_http_is_a_protocol_error_in_one_line():
    trace, _ = _run(lambda path: b"not http\r\n\r\n", {"url": "URL/t"})
    [error] = _errors(trace)
    assert error.startswith("RemoteProtocolError: ") and "\n" not in error
