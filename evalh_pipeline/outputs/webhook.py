"""``output: [{type: webhook, ...}]``: post each finished run's summary (and its drift against
the promoted baseline) to Slack, Discord, Linear or any JSON endpoint.

eval-harness 2.0.2's keys: ``platform`` (``slack`` | ``discord`` | ``linear``; evalh adds
``generic``), ``url`` (the incoming-webhook URL; Linear: its GraphQL API, the default),
``api_key`` (Linear), ``team_id`` / ``issue_id`` (Linear: the issue that gets the comment),
``format`` (accepted, unused, as in eval-harness) and ``timeout_seconds`` (default 10).
evalh adds ``max_attempts`` (default 3) and ``backoff_seconds`` (default 1, doubled per
retry, jittered: the project's one retry policy, common/retrying.py): a timeout, a refused
connection, HTTP 429 or 5xx is retried; other 4xx are not. Posts go through the project's
one HTTP client (common/http_client.py).

It is a sink of ``output[]`` (outputs/sinks.py): it receives the run's view (its summary
and its drift against the promoted baseline) once per summary (``evalh run``,
``re-evaluate``, ``retry-failed``). A webhook never fails a run: a failure is appended to
the run's ``publish.jsonl`` by the sync and reported as a warning. The URL and the API key
are secrets by use (their config's :meth:`WebhookConfig.secrets`, which the loader adds to
the eval's secret values): masked in every message and in the run's config snapshot. The
payloads are documented in docs/guides/outputs.md.
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from evalh_pipeline.common.event_loop import run_coroutine
from evalh_pipeline.common.http_client import HttpClient, HttpError, Response
from evalh_pipeline.common.masking import mask_text
from evalh_pipeline.common.retrying import Backoff, retry_on_exception
from evalh_pipeline.common.tls import default_ssl_context
from evalh_pipeline.errors import InfrastructureError
from evalh_pipeline.outputs.sinks import RunSink
from evalh_pipeline.outputs.stores.base import StoreConfig
from evalh_pipeline.outputs.view import RunView
from evalh_pipeline.systems.http import is_loopback_host

PLATFORMS = ("slack", "discord", "linear", "generic")
LINEAR_API = "https://api.linear.app/graphql"
TOP_REGRESSIONS = 10
TOP_IMPROVEMENTS = 5


class WebhookConfig(StoreConfig):
    """One ``output[]`` entry of ``type: webhook`` (checked when the eval loads)."""

    type: str = "webhook"
    platform: str
    url: str | None = None
    api_key: str | None = None
    team_id: str | None = None
    issue_id: str | None = None
    format: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: float = Field(default=10.0, gt=0)
    max_attempts: int = Field(default=3, ge=1, le=10)
    backoff_seconds: float = Field(default=1.0, ge=0)

    @field_validator("platform")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in PLATFORMS:
            raise ValueError(f"unknown webhook platform {value!r} (known: {', '.join(PLATFORMS)})")
        return value

    @model_validator(mode="after")
    def _target(self) -> WebhookConfig:
        if self.platform == "linear":
            if not self.api_key:
                raise ValueError("platform linear needs api_key (write it as ${LINEAR_API_KEY})")
            if not self.issue_id:
                raise ValueError("platform linear needs issue_id (the issue that gets the run's comment)")
        elif not self.url:
            raise ValueError(f"platform {self.platform} needs url (the incoming-webhook URL, e.g. ${{SLACK_WEBHOOK_URL}})")
        parts = urlsplit(self.target)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("url must be an http(s) URL with a host")
        if parts.scheme == "http" and not is_loopback_host(parts.hostname):
            raise ValueError("url: plain http is only allowed to loopback hosts (127.0.0.0/8, ::1, localhost); "
                             "use https")
        return self

    @property
    def target(self) -> str:
        return self.url or LINEAR_API

    def secrets(self) -> frozenset[str]:
        """Values that must never be written or shown: the URL (a webhook URL is a credential) and the key."""
        return frozenset(v for v in (self.url, self.api_key) if v)


def summary_message(view: RunView) -> dict[str, Any]:
    """The platform-neutral message of a finished run (what ``platform: generic`` posts).

    ``{run_id, eval_name, config_hash, cases_total, variants: [{name, cases_passed,
    cases_total, pass_rate}], comparison: [{variant, baseline, regressions, improvements}],
    drift: null | {baseline_run_id, regressions_count, improvements_count, pass_rate_delta,
    top_regressions, top_improvements}}``.
    """
    summary = view.summary
    message: dict[str, Any] = {
        "run_id": summary.run_id,
        "eval_name": view.eval_name,
        "config_hash": summary.config_hash,
        "cases_total": summary.cases_total,
        "variants": [{"name": v.name, "cases_passed": v.cases_passed, "cases_total": v.cases_total,
                      "pass_rate": v.pass_rate} for v in summary.variants],
        "comparison": [],
        "drift": None,
    }
    if summary.comparison is not None:
        message["comparison"] = [{"variant": d.variant, "baseline": summary.comparison.baseline,
                                  "regressions": list(d.regressions), "improvements": list(d.improvements)}
                                 for d in summary.comparison.deltas]
    drift = view.drift
    if drift is not None:
        message["drift"] = {
            "baseline_run_id": drift.baseline_run_id,
            "regressions_count": drift.regressions_count,
            "improvements_count": drift.improvements_count,
            "pass_rate_delta": drift.pass_rate_delta,
            "top_regressions": drift.regressions[:TOP_REGRESSIONS],
            "top_improvements": drift.improvements[:TOP_IMPROVEMENTS],
        }
    return message


def slack_payload(message: dict[str, Any]) -> dict[str, Any]:
    """Slack Block Kit: a header, one field per variant, and a drift section when there is a baseline."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": f"evalh {message['eval_name']} — {message['run_id']}"}},
    ]
    if message["variants"]:
        blocks.append({"type": "section", "fields": [
            {"type": "mrkdwn", "text": f"*{v['name']}*\n{v['cases_passed']}/{v['cases_total']} passed "
                                       f"({v['pass_rate']:.1%})"} for v in message["variants"]]})
    drift = message["drift"]
    if drift is not None:
        mark = ":warning:" if drift["regressions_count"] else ":white_check_mark:"
        lines = [f"*{mark} Drift vs `{drift['baseline_run_id']}`*",
                 f"pass-rate Δ: *{drift['pass_rate_delta']:+.2%}*    regressions: *{drift['regressions_count']}*    "
                 f"improvements: *{drift['improvements_count']}*"]
        if drift["top_regressions"]:
            lines.append("regressions: " + ", ".join(f"`{c}`" for c in drift["top_regressions"]))
        if drift["top_improvements"]:
            lines.append("improvements: " + ", ".join(f"`{c}`" for c in drift["top_improvements"]))
        blocks += [{"type": "divider"}, {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}}]
    return {"blocks": blocks}


def discord_payload(message: dict[str, Any]) -> dict[str, Any]:
    """Discord: one embed, red when the drift has regressions, else green."""
    drift = message["drift"]
    description = [f"**eval:** `{message['eval_name']}`"]
    if drift is not None:
        description.append(f"**Drift vs `{drift['baseline_run_id']}`** — Δ {drift['pass_rate_delta']:+.2%}, "
                           f"{drift['regressions_count']} regression(s), {drift['improvements_count']} improvement(s)")
        if drift["top_regressions"]:
            description.append("regressions: " + ", ".join(f"`{c}`" for c in drift["top_regressions"]))
    return {"embeds": [{
        "title": f"evalh — {message['run_id']}",
        "description": "\n".join(description),
        "color": 0xE74C3C if drift is not None and drift["regressions_count"] else 0x2ECC71,
        "fields": [{"name": v["name"], "value": f"{v['cases_passed']}/{v['cases_total']} passed ({v['pass_rate']:.1%})",
                    "inline": True} for v in message["variants"]],
    }]}


def linear_markdown(message: dict[str, Any]) -> str:
    """The Linear comment: a heading, a table of variants, the drift."""
    lines = [f"### evalh `{message['eval_name']}` — `{message['run_id']}`", "",
             f"cases_total: **{message['cases_total']}**", ""]
    if message["variants"]:
        lines += ["| variant | passed | pass rate |", "|---|---|---|"]
        lines += [f"| `{v['name']}` | {v['cases_passed']}/{v['cases_total']} | {v['pass_rate']:.1%} |"
                  for v in message["variants"]]
        lines.append("")
    drift = message["drift"]
    if drift is not None:
        lines += [f"#### Drift vs `{drift['baseline_run_id']}`", "",
                  f"- pass-rate Δ: **{drift['pass_rate_delta']:+.2%}**",
                  f"- regressions: **{drift['regressions_count']}**",
                  f"- improvements: **{drift['improvements_count']}**"]
        if drift["top_regressions"]:
            lines += ["", "**Top regressions:**", *(f"- `{c}`" for c in drift["top_regressions"])]
    return "\n".join(lines)


def request_for(config: WebhookConfig, message: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """(headers, JSON body) of the post for ``config.platform``."""
    if config.platform == "slack":
        return {}, slack_payload(message)
    if config.platform == "discord":
        return {}, discord_payload(message)
    if config.platform == "linear":
        mutation = ("mutation CommentCreate($input: CommentCreateInput!) "
                    "{ commentCreate(input: $input) { success } }")
        return {"Authorization": config.api_key or ""}, {
            "query": mutation, "variables": {"input": {"issueId": config.issue_id, "body": linear_markdown(message)}}}
    return {}, message


class WebhookError(InfrastructureError, RuntimeError):
    """A post that failed after its retries (the message never holds the URL or the key).

    Inside :func:`post`, one failed attempt (``retryable``: whether another may succeed).
    """

    def __init__(self, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


def post(config: WebhookConfig, message: dict[str, Any], secrets: frozenset[str] = frozenset()) -> int:
    """Post ``message`` with retries; returns the number of attempts. Raises :class:`WebhookError`."""
    hidden = secrets | config.secrets()
    headers, body = request_for(config, message)
    attempts = 0

    async def attempt(client: HttpClient) -> None:
        nonlocal attempts
        attempts += 1
        try:
            response = await client.request("POST", config.target, json=body, headers=headers)
        except HttpError as exc:
            raise WebhookError(f"{type(exc).__name__}: {exc}", retryable=True) from exc
        if response.status_code >= 300:
            raise WebhookError(f"HTTP {response.status_code}: {response.text[:200]}",
                               retryable=response.status_code == 429 or response.status_code >= 500)
        if config.platform == "linear" and "errors" in _json_or_empty(response):
            raise WebhookError(f"Linear answered errors: {response.text[:200]}")

    async def posting() -> None:
        async with HttpClient(connections=1, tls=default_ssl_context(), timeout=config.timeout_seconds) as client:
            await retry_on_exception(lambda: attempt(client), Backoff(config.max_attempts, config.backoff_seconds),
                                     lambda exc: isinstance(exc, WebhookError) and exc.retryable)

    try:
        run_coroutine(posting())
    except WebhookError as failed:
        raise WebhookError(mask_text(f"{config.platform} webhook {config.target}: {failed} "
                                     f"(after {attempts} attempt(s))", hidden)) from None
    return attempts


def _json_or_empty(response: Response) -> dict[str, Any]:
    try:
        value = response.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class WebhookStore(RunSink[WebhookConfig]):
    """``output: [{type: webhook, ...}]``: posts the run's view when its summary is written."""

    failure_title: ClassVar[str] = "webhook not posted"

    @property
    def label(self) -> str:
        # Never the URL: it is the credential.
        return f"webhook:{self.config.platform}"

    def receive(self, view: RunView) -> None:
        post(self.config, summary_message(view), self.context.secret_values)
