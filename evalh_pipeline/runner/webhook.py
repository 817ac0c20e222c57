"""``output: [{type: webhook, ...}]``: post each finished run's summary (and its drift against
the promoted baseline) to Slack, Discord, Linear or any JSON endpoint.

eval-harness 2.0.2's keys: ``platform`` (``slack`` | ``discord`` | ``linear``; evalh adds
``generic``), ``url`` (the incoming-webhook URL; Linear: its GraphQL API, the default),
``api_key`` (Linear), ``team_id`` / ``issue_id`` (Linear: the issue that gets the comment),
``format`` (accepted, unused, as in eval-harness) and ``timeout_seconds`` (default 10).
evalh adds ``max_attempts`` (default 3) and ``backoff_seconds`` (default 1, doubled per
retry): a timeout, a refused connection, HTTP 429 or 5xx is retried; other 4xx are not.

It is a trace store of ``output[]`` (store/stores/): the store sync after each stage calls it,
and it posts once per summary (``evalh run``, ``re-evaluate``, ``retry-failed``), with the
run's drift against the promoted baseline computed then (a failed blocking gate skips the
drift stage; a notification is wanted most then). A webhook never fails a run: a failure is
appended to the run's ``publish.jsonl`` by the sync and reported as a warning. The URL and
the API key are secrets by use (the loader adds them to the eval's secret values): masked
in every message and in the run's config snapshot. The payloads are documented in the
README ("Webhook output").
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from pydantic import Field, field_validator, model_validator

from evalh_pipeline.errors import InfrastructureError
from evalh_pipeline.common.masking import mask_text
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.store.stores.base import StoreConfig, TraceStore

PLATFORMS = ("slack", "discord", "linear", "generic")
LINEAR_API = "https://api.linear.app/graphql"
TOP_REGRESSIONS = 10
TOP_IMPROVEMENTS = 5
STAGE = "summary"  # the stage after which the run is posted


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
        from urllib.parse import urlsplit

        from evalh_pipeline.systems.http import is_loopback_host

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


def summary_message(run_dir: RunDirectory, eval_name: str, runs_root: Any = None) -> dict[str, Any]:
    """The platform-neutral message of a finished run (what ``platform: generic`` posts).

    ``{run_id, eval_name, config_hash, cases_total, variants: [{name, cases_passed,
    cases_total, pass_rate}], comparison: [{variant, baseline, regressions, improvements}],
    drift: null | {baseline_run_id, regressions_count, improvements_count, pass_rate_delta,
    top_regressions, top_improvements}}``.
    """
    from evalh_pipeline.runner.stages import load_summary

    summary = load_summary(run_dir)
    message: dict[str, Any] = {
        "run_id": summary.run_id,
        "eval_name": eval_name,
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
    drift = _drift(run_dir, eval_name, runs_root)
    if drift.get("baseline_run_id") and drift.get("comparison"):
        deltas = (drift["comparison"].get("comparison") or {}).get("deltas") or []
        regressions = [c for d in deltas for c in d.get("regressions") or []]
        improvements = [c for d in deltas for c in d.get("improvements") or []]
        message["drift"] = {
            "baseline_run_id": drift["baseline_run_id"],
            "regressions_count": int(drift.get("regressions_count") or 0),
            "improvements_count": int(drift.get("improvements_count") or 0),
            "pass_rate_delta": float(deltas[0]["pass_rate_delta"]) if deltas else 0.0,
            "top_regressions": regressions[:TOP_REGRESSIONS],
            "top_improvements": improvements[:TOP_IMPROVEMENTS],
        }
    return message


def _drift(run_dir: RunDirectory, eval_name: str, runs_root: Any) -> dict[str, Any]:
    """drift.yaml when written, else the drift computed now (the post comes before the drift stage,
    which a failed blocking gate may skip: a notification is wanted most then)."""
    from evalh_pipeline.runner.drift import compute_drift, load_drift

    if run_dir.drift.exists():
        return load_drift(run_dir) or {}
    try:
        drift = compute_drift(eval_name, run_dir, runs_root)
    except FileNotFoundError:  # the promoted baseline's folder is gone: post without drift
        return {}
    comparison = drift.comparison
    return {"baseline_run_id": drift.baseline_run_id, "regressions_count": drift.regressions_count,
            "improvements_count": drift.improvements_count,
            "comparison": comparison.to_dict() if comparison is not None else None}


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
    """A post that failed after its retries (the message never holds the URL or the key)."""


def post(config: WebhookConfig, message: dict[str, Any], secrets: frozenset[str] = frozenset()) -> int:
    """Post ``message`` with retries; returns the number of attempts. Raises :class:`WebhookError`."""
    hidden = secrets | config.secrets()
    headers, body = request_for(config, message)
    problem = ""
    attempt = 0
    with httpx.Client(timeout=config.timeout_seconds, follow_redirects=False) as client:
        for attempt in range(1, config.max_attempts + 1):
            retry = True
            try:
                response = client.post(config.target, json=body, headers=headers)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    if config.platform == "linear" and "errors" in _json_or_empty(response):
                        problem, retry = f"Linear answered errors: {response.text[:200]}", False
                    else:
                        return attempt
                else:
                    problem = f"HTTP {response.status_code}: {response.text[:200]}"
                    retry = response.status_code == 429 or response.status_code >= 500
            if not retry or attempt == config.max_attempts:
                break
            time.sleep(config.backoff_seconds * 2 ** (attempt - 1))
    raise WebhookError(mask_text(f"{config.platform} webhook {config.target}: {problem} "
                                 f"(after {attempt} attempt(s))", hidden))


def _json_or_empty(response: httpx.Response) -> dict[str, Any]:
    try:
        value = response.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class WebhookStore(TraceStore[WebhookConfig]):
    """``output: [{type: webhook, ...}]``: posts the run when its summary is written."""

    @property
    def label(self) -> str:
        # Never the URL: it is the credential.
        return f"webhook:{self.config.platform}"

    def write_run(self, run_dir: RunDirectory, stage: str) -> None:
        if stage != STAGE:
            return
        eval_name = run_dir.read_meta().get("eval_name") or run_dir.run_id
        message = summary_message(run_dir, eval_name, run_dir.path.parent)
        post(self.config, message, self.context.secret_values)
