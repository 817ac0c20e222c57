"""``http`` enricher: fetch the upstream record of a trace as JSON and merge fields of it in.

    enrich_trace_from:
      - type: http
        url: "http://langfuse:3000/api/public/traces/{{ trace.extra.trace_id }}"
        headers: {authorization: "Basic ${LANGFUSE_BASIC_AUTH}"}
        wait_for_ingestion_seconds: 2     # retry a 404 until then (platforms ingest late)
        timeout_seconds: 5
        merge:                            # trace field <- JSONPath into the response
          metrics.token_input: $.usage.input
          metrics.cost_usd: $.totalCost
          extra.upstream_latency_ms: $.latency

``{{ trace.<path> }}`` and ``{{ case.<path> }}`` in ``url`` and header values are
replaced (URL-quoted in the URL); a trace without the field (no ``extra.trace_id``) is an
enrichment error, not a request to a wrong URL. This covers any platform with a JSON
read API (Langfuse, Phoenix, a team's own trace service).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pydantic import Field, field_validator

from evalh_pipeline.enrichers.base import EnricherConfig, TraceEnricher
from evalh_pipeline.common.fields import FieldPath

if TYPE_CHECKING:
    from evalh_pipeline.models import EvalCase, Trace

_TEMPLATE = re.compile(r"\{\{\s*(trace|case)\.([\w.\[\]]+)\s*\}\}")
_MISSING = object()
# Top-level trace fields an enricher may set (the cell's identity and timing stay the runner's).
MERGEABLE = ("output", "messages", "tool_calls", "tool_results", "metrics", "extra")


class HttpEnricherConfig(EnricherConfig):
    url: str
    method: str = Field(default="GET", pattern=r"^(GET|POST)$")
    headers: dict[str, str] = Field(default_factory=dict)
    merge: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(default=10, gt=0)
    wait_for_ingestion_seconds: float = Field(default=0, ge=0)

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("url must be an http:// or https:// URL")
        return value

    @field_validator("merge")
    @classmethod
    def _targets(cls, value: dict[str, str]) -> dict[str, str]:
        from jsonpath_ng.ext.parser import parse

        for target, path in value.items():
            if FieldPath(target).parts[0] not in MERGEABLE:
                raise ValueError(f"merge target {target!r}: must start with one of {', '.join(MERGEABLE)}")
            try:
                parse(path)
            except Exception as exc:  # noqa: BLE001 - jsonpath-ng raises several types
                raise ValueError(f"merge {target}: invalid JSONPath {path!r}: {exc}") from None
        return value


def _render(text: str, case: EvalCase, trace: Trace, quoted: bool) -> str:
    roots = {"trace": trace, "case": case}

    def one(match: re.Match[str]) -> str:
        value = FieldPath(match.group(2)).get(roots[match.group(1)], _MISSING)
        if value is _MISSING or value is None:
            raise LookupError(f"{match.group(0)}: the {match.group(1)} has no such field")
        text = value if isinstance(value, str) else str(value)
        return quote(text, safe="") if quoted else text

    return _TEMPLATE.sub(one, text)


def _assign(target: dict[str, Any], path: str, value: Any) -> None:
    parts = FieldPath(path).parts
    node: dict[Any, Any] = target  # a numeric part of the path is a key too, as the JSON it becomes
    for part in parts[:-1]:
        if not isinstance(node, dict):
            raise ValueError(f"merge target {path!r}: {part!r} is not an object")
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value


class HttpEnricher(TraceEnricher[HttpEnricherConfig]):
    """GET (or POST) one JSON document per trace; merge the configured fields."""

    async def start(self) -> None:
        from evalh_pipeline.common.http_client import HttpClient
        from evalh_pipeline.common.tls import default_ssl_context

        # The project's one HTTP client (aiohttp: a fraction of httpx's CPU per request, and
        # one request per trace); redirects are not followed; 100 connections as httpx's pool had.
        self._client = HttpClient(connections=100, tls=default_ssl_context(), timeout=self.config.timeout_seconds)

    async def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            await client.aclose()

    async def enrich(self, case: EvalCase, trace: Trace) -> None:
        from jsonpath_ng.ext.parser import parse

        from evalh_pipeline.models import Trace as TraceModel

        url = _render(self.config.url, case, trace, quoted=True)
        headers = {k: _render(v, case, trace, quoted=False) for k, v in self.config.headers.items()}
        document = await self._fetch(url, headers)
        data = trace.model_dump(mode="json")
        for target, path in self.config.merge.items():
            found = [m.value for m in parse(path).find(document)]
            if not found:
                continue
            _assign(data, target, found[0] if len(found) == 1 else found)
        updated = TraceModel.model_validate(data)
        for field in MERGEABLE:
            setattr(trace, field, getattr(updated, field))

    async def _fetch(self, url: str, headers: dict[str, str]) -> Any:
        deadline = time.monotonic() + self.config.wait_for_ingestion_seconds
        while True:
            response = await self._client.request(self.config.method, url, headers=headers)
            if response.status_code == 404 and time.monotonic() < deadline:
                await asyncio.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
                continue
            if response.status_code >= 400:
                from yarl import URL

                # Without the query string: it may carry an API key.
                raise RuntimeError(f"HTTP {response.status_code} from {URL(url).with_query(None)}")
            return response.json()
