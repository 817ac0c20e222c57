"""``http``: call an HTTP endpoint once per cell (common/http_client.py) and map its JSON response."""

from __future__ import annotations

import ipaddress
import json
import re
import time
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
from jsonpath_ng.ext.parser import parse as parse_jsonpath
from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator
from yarl import URL

from evalh_pipeline.models import (
    EvalCase,
    ToolCall,
    ToolResult,
    TraceMessage,
    TraceMetrics,
    TraceOutput,
)
from evalh_pipeline.common.http_client import HttpClient, HttpError, TimeoutException
from evalh_pipeline.common.masking import is_secret_key, mask_text
from evalh_pipeline.common.ratelimits import rate_limit_of
from evalh_pipeline.systems.base import (
    AdapterError,
    SystemAdapter,
    SystemConfigModel,
    SystemResponse,
    Workspace,
    WorkspaceKind,
)
from evalh_pipeline.systems.http_presets import PRESETS, Preset
from evalh_pipeline.systems.http_stream import (
    READERS,
    STREAM_FORMATS,
    STREAM_MAPPING_KEYS,
    STREAM_PRESETS,
    STREAMING_PROVIDERS,
    MappedStream,
    RawStream,
    StreamTooLarge,
)
from evalh_pipeline.llm.stream import Stream
from evalh_pipeline.systems.http_paths import JsonPath, find_first
from evalh_pipeline.systems.response import malformed_response, response_from_dict
from evalh_pipeline.common.tls import default_ssl_context
from evalh_pipeline.common.templating import (
    MissingTemplateField,
    render_case_template,
    render_structure,
    template_problems,
)

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
# Headers that carry a credential: requests with different ones meet different rate limits.
_CREDENTIAL_HEADERS = {"authorization", "x-api-key", "api-key", "x-goog-api-key", "proxy-authorization"}
SNIPPET_CHARS = 300

# response_mapping keys -> where they land.
MAPPING_KEYS = (
    "final_answer", "thinking", "structured", "tool_calls", "tool_results", "messages", "trace_id",
    "tokens.input", "tokens.output", "tokens.thinking", "cost",
)
_TOKEN_METRICS = {"tokens.input": "token_input", "tokens.output": "token_output", "tokens.thinking": "token_thinking"}
_MESSAGE_KEYS = ("role", "content", "thinking", "name")
# What a stream without a provider is folded into (see MappedStream.as_response).
_STREAM_DOC_MAPPING = {
    "final_answer": "$.final_answer", "thinking": "$.thinking", "tool_calls": "$.tool_calls",
    "tokens.input": "$.tokens.input", "tokens.output": "$.tokens.output", "tokens.thinking": "$.tokens.thinking",
    "trace_id": "$.trace_id",
}
# Body fields a provider's streaming request needs (Gemini streams through `alt=sse` instead).
_STREAM_BODY: dict[str, dict[str, Any]] = {
    "openai_chat": {"stream": True, "stream_options": {"include_usage": True}},
    "deepseek": {"stream": True, "stream_options": {"include_usage": True}},
    "anthropic_messages": {"stream": True},
}


def _check_paths(kind: str, value: dict[str, str | list[str]], allowed: tuple[str, ...]) -> None:
    problems = []
    for key, paths in value.items():
        if key not in allowed:
            problems.append(f"unknown {kind} key {key!r} (allowed: {', '.join(allowed)})")
            continue
        for path in [paths] if isinstance(paths, str) else paths:
            try:
                parse_jsonpath(path)
            except Exception as exc:  # noqa: BLE001 - the parser raises several types
                problems.append(f"{kind} {key}: invalid JSONPath {path!r}: {exc}")
    if problems:
        raise ValueError("; ".join(problems))


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


WORKSPACE_HEADER = "X-Evalh-Workspace-Path"
_WORKSPACE_PATH = re.compile(r"\{\{\s*workspace\.path\s*\}\}")


def _with_workspace(value: Any, workspace: Workspace | None, case_id: str) -> Any:
    """``value`` with each ``{{ workspace.path }}`` replaced by the cell's workspace folder."""
    if isinstance(value, dict):
        return {k: _with_workspace(v, workspace, case_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_workspace(v, workspace, case_id) for v in value]
    if isinstance(value, str) and _WORKSPACE_PATH.search(value):
        if workspace is None:
            raise AdapterError(f"case {case_id!r}: request_template uses {{{{ workspace.path }}}} but the eval "
                               "has no workspace: section")
        return _WORKSPACE_PATH.sub(lambda _: str(workspace.path), value)
    return value


def _string_leaves(value: Any, at: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(at or "(root)", value)]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _string_leaves(v, f"{at}.{k}" if at else str(k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _string_leaves(v, f"{at}[{i}]")]
    return []


class HttpConfig(SystemConfigModel):
    # With a `provider`, keys this model does not name (`temperature`, `max_tokens`, ...)
    # are request fields added to the body, like `model`.
    model_config = ConfigDict(extra="allow")

    endpoint: str
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    query_params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    body: dict[str, Any] = Field(default_factory=dict)
    request_template: dict[str, Any] | list[Any] | str | None = None
    response_mapping: dict[str, str | list[str]] = Field(default_factory=dict)
    provider: str | None = None
    model: str | None = None
    stream: bool = False
    stream_format: str | None = None
    stream_mapping: dict[str, str | list[str]] = Field(default_factory=dict)
    max_response_bytes: int = Field(default=MAX_RESPONSE_BYTES, gt=0)

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("headers", mode="before")
    @classmethod
    def _header_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for k, v in value.items()}
        return value

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"endpoint must be an http(s) URL with a host; got {mask_text(value)!r}")
        if parts.scheme == "http" and not is_loopback_host(parts.hostname):
            raise ValueError(
                f"endpoint {mask_text(value)!r}: plain http is only allowed to loopback hosts "
                "(127.0.0.0/8, ::1, localhost); use https"
            )
        return value

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str | None) -> str | None:
        if value is not None and value not in PRESETS:
            raise ValueError(f"unknown provider {value!r} (known: {', '.join(PRESETS)})")
        return value

    @field_validator("request_template")
    @classmethod
    def _templates(cls, value: Any) -> Any:
        problems = [f"request_template {at}: {p}" for at, text in _string_leaves(value)
                    for p in template_problems(text, ("workspace.path",))]
        if problems:
            raise ValueError("; ".join(problems))
        return value

    @field_validator("response_mapping")
    @classmethod
    def _mapping(cls, value: dict[str, str | list[str]]) -> dict[str, str | list[str]]:
        _check_paths("response_mapping", value, MAPPING_KEYS)
        return value

    @field_validator("stream_mapping")
    @classmethod
    def _stream_mapping(cls, value: dict[str, str | list[str]]) -> dict[str, str | list[str]]:
        _check_paths("stream_mapping", value, STREAM_MAPPING_KEYS)
        return value

    @field_validator("stream_format")
    @classmethod
    def _stream_format(cls, value: str | None) -> str | None:
        if value is not None and value not in STREAM_FORMATS:
            raise ValueError(f"unknown stream_format {value!r} (known: {', '.join(STREAM_FORMATS)})")
        return value

    def unused_keys(self) -> dict[str, str]:
        """Without a provider, keys this model does not name are not sent (eval-harness ignores them too)."""
        if self.provider is not None:
            return {}
        import difflib

        known = sorted(type(self).model_fields)
        found = {}
        for key in sorted(self.model_extra or {}):
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
            found[key] = (f"unknown key for adapter 'http', ignored as eval-harness does ({hint}; extra "
                          "request fields are only sent with a provider preset)")
        return found

    @model_validator(mode="after")
    def _extras(self) -> HttpConfig:
        self._check_stream()
        if self.body and isinstance(self.request_template, list):
            raise ValueError("body can only be merged with a request_template that is a mapping "
                             "(or a string that renders to a JSON object)")
        return self

    def _check_stream(self) -> None:
        if not self.stream:
            if self.stream_format is not None or self.stream_mapping:
                raise ValueError("stream_format and stream_mapping only apply with stream: true")
            return
        if self.provider is not None:
            if self.provider not in STREAMING_PROVIDERS:
                raise ValueError(f"stream: true is not supported with provider {self.provider!r} "
                                 f"(streaming providers: {', '.join(STREAMING_PROVIDERS)}; or no provider "
                                 "with stream_format and stream_mapping)")
            if self.stream_format not in (None, "sse"):
                raise ValueError(f"provider {self.provider} streams server-sent events; "
                                 f"stream_format {self.stream_format!r} does not apply")
            if self.stream_mapping:
                raise ValueError(f"stream_mapping is for streams without a provider; {self.provider} "
                                 "has its own event shapes")
            return
        if (self.stream_format or "sse") == "raw_chunks":
            if self.stream_mapping:
                raise ValueError("stream_format raw_chunks appends plain text; stream_mapping does not apply")
        elif "delta" not in self.stream_mapping:
            raise ValueError("stream: true without a provider needs stream_mapping.delta (JSONPath to the "
                             "text delta of each event), or stream_format: raw_chunks")


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _request_url(cfg: HttpConfig) -> URL:
    """The URL every cell is sent to: built once (the same for every cell), with httpx's URL
    rules as before (values like `true` spelled as httpx spells them). The endpoint's own
    query string (?api-version=…, ?key=…) is kept, the variant's params winning on a shared name."""
    params = dict(cfg.query_params)
    if cfg.stream and cfg.provider == "gemini" and "alt" not in params and "alt=" not in urlsplit(cfg.endpoint).query:
        params["alt"] = "sse"  # streamGenerateContent answers a JSON array without it
    return URL(str(httpx.URL(cfg.endpoint).copy_merge_params(params)))


class HttpSystem(SystemAdapter[HttpConfig]):
    """Sends one request per cell and maps the JSON response into the trace.

    - A workspace's host path goes to the service (``{{ workspace.path }}``, the
      ``X-Evalh-Workspace-Path`` header): never with a sandboxed (``docker_volume``) workspace.

    - ``endpoint`` (https, or http to a loopback host), ``method`` (default POST),
      ``headers`` (never recorded), ``query_params``.
    - The body (JSON) is, merged in this order: the ``provider`` preset's request built
      from the case (with ``model`` and the variant's other request fields), the static
      ``body``, then ``request_template``: a mapping with its ``{{ case.<path> }}`` leaves
      rendered, or (eval-harness) a string rendered as text and parsed as JSON. Without a
      provider or template the body is ``body`` with the case input on top, as in
      eval-harness (a GET sends only ``body``, and nothing when it is empty).
    - ``response_mapping``: JSONPath (jsonpath-ng, filters allowed) per key; a list of
      paths means "the first that matches". Without a provider or mapping, the response is
      read like a ``python_function`` return value.
    - ``stream: true``: with ``openai_chat`` / ``deepseek`` / ``anthropic_messages`` /
      ``gemini`` the provider's server-sent events are folded back into one response;
      without a provider, ``stream_format: sse | json_lines | raw_chunks`` and
      ``stream_mapping`` (``delta``, ``thinking_delta``, ``done``, ``tool_call``,
      ``tokens.*``, ``trace_id``) read the events. Timed for first/last token latency,
      chunks, tokens per second; ``stream_completed`` is false when the stream ends
      without its done marker or the connection breaks (what arrived is kept).
    - A rate limit (429, a 503 with ``Retry-After``, a provider's rate-limit error body) ->
      ``rate_limited`` with the wait the server asked for (the runner waits and retries).
    - 5xx -> ``http_5xx``; other non-2xx, non-JSON, bodies over ``max_response_bytes`` and
      network errors -> ``adapter_error``. Timeouts are the runner's.
    """

    @classmethod
    def works_outside_sandbox(cls, config: dict[str, Any]) -> bool:
        return True  # the service gets the host path of the workspace

    async def start(self) -> None:
        cfg: HttpConfig = self.config
        self._preset: Preset | None = PRESETS[cfg.provider] if cfg.provider else None
        mapping: dict[str, str | list[str]] = dict(self._preset.response_mapping) if self._preset else {}
        mapping.update(cfg.response_mapping)
        self._mapping = {
            key: [JsonPath(p) for p in ([paths] if isinstance(paths, str) else paths)]
            for key, paths in mapping.items()
        }
        self._stream_doc_mapping = {key: [JsonPath(p)] for key, p in _STREAM_DOC_MAPPING.items()}
        headers = {**(self._preset.headers if self._preset else {}), **cfg.headers}
        self._url = _request_url(cfg)
        # One connection pool of max_concurrency connections.
        self._client = HttpClient(
            connections=self.context.max_concurrency, tls=default_ssl_context(), headers=headers,
            # The runner owns the cell's timeout; this only stops a stuck socket outliving it.
            timeout=cfg.timeout_seconds + 10,
        )

    def preflight(self, workspace: WorkspaceKind = None) -> list[tuple[str, str]]:
        """The endpoint as the run builds its URL: a port it cannot have, a host with spaces
        or empty labels (the loader has checked the scheme and that http is loopback only)."""
        cfg: HttpConfig = self.config
        shown = mask_text(cfg.endpoint)
        try:
            url = _request_url(cfg)
            port = urlsplit(cfg.endpoint).port
        except (ValueError, httpx.InvalidURL) as exc:
            return [("endpoint", f"{shown} is not a URL the run can send to: {exc}")]
        host = url.host or ""
        if port == 0:
            return [("endpoint", f"{shown}: port 0 is not a port a service listens on")]
        if any(c.isspace() for c in host) or "" in host.rstrip(".").split("."):
            return [("endpoint", f"{shown}: host {host!r} is not a host name")]
        return []

    def rate_limit_scope(self) -> tuple[str, str | None] | None:
        """The endpoint and the credential sent with it: the headers and query parameters that
        carry one (``Authorization``, ``x-api-key``, ``?key=`` ...)."""
        cfg: HttpConfig = self.config
        sent = {**(self._preset.headers if self._preset else {}), **cfg.headers}
        parts = [f"{k.lower()}={v}" for k, v in sorted(sent.items()) if k.lower() in _CREDENTIAL_HEADERS]
        parts += [f"?{k}={v}" for k, v in sorted(self._url.query.items()) if is_secret_key(k)]
        return cfg.endpoint, "\n".join(parts) or None

    async def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            await client.aclose()

    def build_body(self, case: EvalCase, workspace: Workspace | None = None) -> Any:
        cfg: HttpConfig = self.config
        case_dict = case.model_dump(mode="json")
        base: dict[str, Any] = {}
        if self._preset is not None:
            base = self._preset.request(case_dict)
            fields = dict(cfg.model_extra or {})
            if cfg.model is not None and self._preset.model_in_body:
                fields["model"] = cfg.model
            base = _deep_merge(base, fields)
        base = _deep_merge(base, cfg.body)
        if cfg.request_template is None:
            # eval-harness: without a template the static body is sent with the case input on top.
            # A GET sends no case input (only a configured `body`, if any).
            merge_input = self._preset is None and cfg.method != "GET"
            body: Any = {**base, **(case_dict.get("input") or {})} if merge_input else base
        elif isinstance(cfg.request_template, str):
            body = self._render_text_template(_with_workspace(cfg.request_template, workspace, case.id), case_dict, base)
        else:
            try:
                rendered = render_structure(_with_workspace(cfg.request_template, workspace, case.id), case_dict)
            except MissingTemplateField as exc:
                raise AdapterError(f"case {case.id!r} has no field for template {exc.template}") from None
            body = _deep_merge(base, rendered) if isinstance(rendered, dict) else rendered
        stream_body = _STREAM_BODY.get(cfg.provider or "") if cfg.stream else None
        if stream_body and isinstance(body, dict):
            body = {**body, "stream": True}
            for key, value in stream_body.items():
                body.setdefault(key, value)
        if self._preset is not None and isinstance(body, dict):
            missing = [k for k in self._preset.required_body if k not in body]
            if missing:
                raise AdapterError(
                    f"case {case.id!r}: the {self._preset.name} request has no {', '.join(missing)} "
                    "(give the case input.user_message or input.messages, or set it in request_template)"
                )
        return body

    def _render_text_template(self, template: str, case_dict: dict[str, Any], base: dict[str, Any]) -> Any:
        """eval-harness's string template: rendered as text, then parsed as JSON (a JSON object
        goes on top of the static body). A path the case lacks renders empty (``null`` with ``| json``)."""
        rendered = render_case_template(template, case_dict, strict=False)
        try:
            parsed = json.loads(rendered)
        except ValueError as exc:
            shown = mask_text(rendered[:SNIPPET_CHARS], self.context.secret_values)
            raise AdapterError(f"request_template did not render to valid JSON ({exc}); rendered: {shown!r} "
                               "(quote string values with '| json': {{ input.x | json }})") from None
        return _deep_merge(base, parsed) if isinstance(parsed, dict) else parsed

    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:  # noqa: C901 - the next function to split (request, stream, map, errors)
        cfg: HttpConfig = self.config
        body = self.build_body(case, workspace)
        kwargs: dict[str, Any] = {}
        if workspace is not None:
            # Filesystem.md: an adapter never skips the workspace handle. A service that takes
            # a path finds it here even when no template names {{ workspace.path }}.
            kwargs["headers"] = {WORKSPACE_HEADER: str(workspace.path)}
        if not (cfg.method == "GET" and body == {}):
            kwargs["json"] = body
        secrets = self.context.secret_values
        stream: Stream | None = None
        fmt = cfg.stream_format or "sse"
        try:
            started = time.monotonic()
            async with self._client.stream(cfg.method, self._url, **kwargs) as resp:
                status = resp.status_code
                content_type = resp.headers.get("content-type", "")
                if cfg.stream and 200 <= status < 300 and (
                        fmt != "sse" or "text/event-stream" in content_type.lower()):
                    stream = self._new_stream(started)
                    raw: bytes | None = b""
                    try:
                        await READERS[fmt](resp, stream, cfg.max_response_bytes)
                    except StreamTooLarge:
                        raw = None
                else:
                    raw = await resp.read(cfg.max_response_bytes)
        except TimeoutException as exc:
            raise AdapterError(f"HTTP request timed out: {type(exc).__name__}", type="timeout") from None
        except HttpError as exc:
            message = mask_text(f"HTTP request failed: {type(exc).__name__}: {exc}", secrets)
            raise AdapterError(message) from None
        extra: dict[str, Any] = {"http_status": status}
        partial = SystemResponse(extra=extra)
        if raw is None:
            raise AdapterError(f"response body is larger than {cfg.max_response_bytes:,} bytes (HTTP {status})",
                               partial=partial)
        if (limited := rate_limit_of(status, resp.headers, raw)) is not None:
            raise AdapterError(f"HTTP {status} (rate limited) from the endpoint: {_snippet(raw, secrets)}",
                               type="rate_limited", partial=partial, retry_after=limited.retry_after)
        if status >= 500:
            raise AdapterError(f"HTTP {status} from the endpoint: {_snippet(raw, secrets)}", type="http_5xx",
                               partial=partial)
        if not 200 <= status < 300:
            raise AdapterError(f"HTTP {status} from the endpoint: {_snippet(raw, secrets)}", partial=partial)
        if stream is not None:
            try:
                if self._preset is not None:
                    response = self._map(stream.as_response(), streamed=True)
                else:
                    response = self._map(stream.as_response(), self._stream_doc_mapping, streamed=True)
            except AdapterError as exc:
                exc.partial = partial
                raise
            for name, value in stream.metrics(response.metrics.token_output).items():
                if name == "custom":
                    response.metrics.custom = {**response.metrics.custom, **value}
                else:
                    setattr(response.metrics, name, value)
            response.extra = {**response.extra, **extra}
            return response
        if "json" not in content_type.lower():
            raise AdapterError(f"expected a JSON response, got content type {content_type or 'none'!r}: "
                               f"{_snippet(raw, secrets)}", partial=partial)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise AdapterError(f"response is not valid JSON ({exc}): {_snippet(raw, secrets)}",
                               partial=partial) from None
        if not self._mapping:
            try:
                response = response_from_dict(data)
            except AdapterError as exc:
                exc.partial = partial
                raise
        else:
            try:
                response = self._map(data)
            except AdapterError as exc:
                exc.partial = partial
                raise
        response.extra = {**response.extra, **extra}
        return response

    def _new_stream(self, started: float) -> Stream:
        cfg: HttpConfig = self.config
        if cfg.provider is not None:
            return STREAM_PRESETS[cfg.provider](started=started)
        if cfg.stream_format == "raw_chunks":
            return RawStream(started=started)
        paths = {key: [JsonPath(p) for p in ([v] if isinstance(v, str) else v)]
                 for key, v in cfg.stream_mapping.items()}
        return MappedStream(started=started, paths=paths,
                            complete_at_end=cfg.stream_format == "json_lines" and "done" not in paths)

    def _map(self, data: Any, mapping: dict[str, list[JsonPath]] | None = None, *, streamed: bool = False) -> SystemResponse:
        found = {key: find_first(paths, data) for key, paths in (self._mapping if mapping is None else mapping).items()}
        # Several matches (Anthropic's text blocks around a tool_use) are joined by a newline, as
        # eval-harness does; a stream folded back into one response joins its pieces as they came.
        output = TraceOutput(
            final_answer=_text(found.get("final_answer"), "" if streamed else "\n"),
            thinking=_text(found.get("thinking"), "\n\n" if streamed else "\n"),
            structured=_structured(found.get("structured")),
        )
        if mapping is None and self._preset is not None and self._preset.post is not None:
            self._preset.post(output)
        # The values as the server sent them, checked by TraceMetrics' own rules (as a
        # python_function's are): a count of -5 or 2**60 errors the cell, it is not stored.
        reported = {metric: _number(found.get(key), key) for key, metric in _TOKEN_METRICS.items()}
        try:
            metrics = TraceMetrics.model_validate({**reported, "cost_usd": _number(found.get("cost"), "cost")})
        except ValidationError as exc:
            raise malformed_response(exc, ("metrics",)) from None
        extra: dict[str, Any] = {}
        trace_id = _first(found.get("trace_id"))
        if trace_id is not None:
            extra["trace_id"] = trace_id
        try:
            return SystemResponse(
                output=output,
                messages=[_message(m) for m in _items(found.get("messages"))],
                tool_calls=[_tool_call(c) for c in _items(found.get("tool_calls"))],
                tool_results=[ToolResult.model_validate(r) for r in _items(found.get("tool_results"))],
                metrics=metrics,
                extra=extra,
            )
        except ValueError as exc:
            raise AdapterError(f"response does not fit the mapping: {exc}") from None


def _snippet(raw: bytes, secrets: frozenset[str]) -> str:
    text = raw[: SNIPPET_CHARS * 4].decode("utf-8", errors="replace")
    shown = text[:SNIPPET_CHARS] + ("..." if len(raw) > SNIPPET_CHARS else "")
    return repr(mask_text(shown, secrets)) if shown else "(empty body)"


def _first(values: list[Any] | None) -> Any:
    if not values:
        return None
    return next((v for v in values if v is not None), None)


def _text(values: list[Any] | None, sep: str) -> str | None:
    if not values:
        return None
    parts: list[str] = []
    for value in values:
        if value is None:
            continue
        if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}, ...]
            texts: list[str] = [p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
            parts.append("".join(texts) if texts else json.dumps(value, ensure_ascii=False))
        elif isinstance(value, str):
            parts.append(value)
        else:
            parts.append(json.dumps(value, ensure_ascii=False))
    return sep.join(parts) if parts else None


def _structured(values: list[Any] | None) -> dict[str, Any] | None:
    value = _first(values)
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    raise AdapterError(f"structured must be a JSON object; the mapping found {type(value).__name__}")


def _number(values: list[Any] | None, key: str) -> Any:
    """The first value the mapping found for a metric, as sent (TraceMetrics checks it)."""
    value = _first(values)
    if isinstance(value, bool):  # pydantic would read true as 1
        raise AdapterError(f"{key} must be a number; the mapping found {value!r}")
    return value


def _items(values: list[Any] | None) -> list[Any]:
    items: list[Any] = []
    for value in values or []:
        if isinstance(value, list):
            items.extend(value)
        elif value is not None:
            items.append(value)
    return items


def _arguments(value: Any) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"_raw": value}
    return value if isinstance(value, dict) else {"value": value}


def _tool_call(item: Any) -> ToolCall:
    """A tool call in the OpenAI (function + JSON-string arguments), Anthropic (tool_use +
    input), Gemini (functionCall: name + args) or plain (name + arguments) shape."""
    if not isinstance(item, dict):
        raise AdapterError(f"a tool call must be an object; the mapping found {type(item).__name__}")
    call_id = item.get("id")
    if isinstance(item.get("function"), dict):
        fn = item["function"]
        name, args = fn.get("name"), fn.get("arguments")
    elif isinstance(item.get("functionCall"), dict):
        fn = item["functionCall"]
        name, args = fn.get("name"), fn.get("args")
    else:
        name = item.get("name")
        args = next((item[k] for k in ("arguments", "input", "args") if k in item), None)
    if not isinstance(name, str) or not name:
        raise AdapterError(f"a tool call has no name: {json.dumps(item)[:SNIPPET_CHARS]}")
    return ToolCall(id=str(call_id) if call_id is not None else None, name=name, arguments=_arguments(args))


def _message(item: Any) -> TraceMessage:
    if not isinstance(item, dict):
        raise AdapterError(f"a message must be an object; the mapping found {type(item).__name__}")
    return TraceMessage.model_validate({k: item[k] for k in _MESSAGE_KEYS if k in item})
