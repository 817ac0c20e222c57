"""output webhook: a finished run posted to a real loopback receiver (Slack / Discord / Linear / generic)."""

from __future__ import annotations

import json

import pytest
import yaml

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.outputs.stores.base import StoreContext
from evalh_pipeline.outputs.webhook import WebhookConfig, WebhookError, WebhookStore
from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval
from tests.support.http_server import FakeHandler, HandlerServer


class Receiver:
    """A loopback HTTP server recording every POST; ``statuses`` are answered in order, then 200."""

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.posts: list[dict] = []
        self.statuses = list(statuses or [])
        receiver = self

        class Handler(FakeHandler):
            def do_POST(self):
                receiver.posts.append({"path": self.path, "body": self.body_json(), "headers": dict(self.headers)})
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_bytes(status, b"ok" if status < 300 else b"overloaded", content_type="text/plain")

        self.server = HandlerServer(Handler)
        self.url = self.server.url

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def receiver():
    made: list[Receiver] = []

    def make(statuses=None) -> Receiver:
        made.append(Receiver(statuses))
        return made[-1]

    yield make
    for r in made:
        r.close()


def post_run_webhooks(configs: list[WebhookConfig], run_dir: RunDirectory, eval_name: str) -> list[str]:
    """What the store sync does after the summary stage: each webhook store posts (failures collected)."""
    failures = []
    for config in configs:
        store = WebhookStore(config.model_dump(), StoreContext(eval_dir=run_dir.path))
        try:
            store.write_run(run_dir, "summary")
        except WebhookError as exc:
            failures.append(str(exc))
    return failures


def _finished_run(tmp_path, **summary_extra) -> RunDirectory:
    run_dir = RunDirectory(tmp_path / "runs" / "2026-05-02T10-00-00-000000_listing")
    run_dir.path.mkdir(parents=True)
    (run_dir.path / "run.json").write_text(json.dumps({"eval_name": "listing", "variants": ["main"]}))
    summary = {"schema_version": "1.0", "run_id": run_dir.run_id, "started_at": "2026-05-02T10:00:00Z",
               "finished_at": "2026-05-02T10:01:00Z", "config_path": "eval.yaml", "config_hash": "abc",
               "cases_total": 4,
               "variants": [{"name": "main", "cases_total": 4, "cases_passed": 3, "cases_errored": 0,
                             "pass_rate": 0.75, "avg_latency_ms": 10.0}],
               "by_evaluator": [], **summary_extra}
    run_dir.summary.write_text(yaml.safe_dump(summary))
    run_dir.drift.write_text(yaml.safe_dump({
        "run_id": run_dir.run_id, "eval_name": "listing", "status": "compared", "baseline_run_id": "base_run",
        "regressions_count": 2, "improvements_count": 1,
        "comparison": {"comparison": {"baseline": "base_run", "deltas": [
            {"variant": "main", "pass_rate_delta": -0.25, "regressions": ["c1", "c2"], "improvements": ["c9"]}]}}}))
    return run_dir


def test_slack_post_carries_variants_and_drift_and_is_retried_after_a_5xx(tmp_path, receiver):
    hook = receiver([503, 500])
    config = WebhookConfig(platform="slack", url=f"{hook.url}/services/T1/B1/secret-token", backoff_seconds=0)
    assert post_run_webhooks([config], _finished_run(tmp_path), "listing") == []
    assert len(hook.posts) == 3  # two 5xx, then delivered
    blocks = hook.posts[-1]["body"]["blocks"]
    text = json.dumps(blocks)
    assert blocks[0]["text"]["text"] == "evalh listing — 2026-05-02T10-00-00-000000_listing"
    assert "3/4 passed (75.0%)" in text and "Drift vs `base_run`" in text
    assert "regressions: *2*" in text and "`c1`, `c2`" in text and "`c9`" in text


def test_discord_linear_and_generic_payloads(tmp_path, receiver):
    hook = receiver()
    run_dir = _finished_run(tmp_path)
    configs = [WebhookConfig(platform="discord", url=f"{hook.url}/discord"),
               WebhookConfig(platform="linear", url=f"{hook.url}/graphql", api_key="lin_api_key_1", issue_id="ISS-1"),
               WebhookConfig(platform="generic", url=f"{hook.url}/generic")]
    assert post_run_webhooks(configs, run_dir, "listing") == []
    discord, linear, generic = (p["body"] for p in hook.posts)
    (embed,) = discord["embeds"]
    assert embed["color"] == 0xE74C3C and embed["fields"][0]["value"] == "3/4 passed (75.0%)"
    assert hook.posts[1]["headers"]["Authorization"] == "lin_api_key_1"
    assert linear["variables"]["input"]["issueId"] == "ISS-1"
    assert "| `main` | 3/4 | 75.0% |" in linear["variables"]["input"]["body"]
    assert generic["eval_name"] == "listing" and generic["cases_total"] == 4
    assert generic["drift"] == {"baseline_run_id": "base_run", "regressions_count": 2, "improvements_count": 1,
                                "pass_rate_delta": -0.25, "top_regressions": ["c1", "c2"], "top_improvements": ["c9"]}
    assert generic["variants"] == [{"name": "main", "cases_passed": 3, "cases_total": 4, "pass_rate": 0.75}]


def test_a_webhook_that_keeps_failing_says_so_with_the_url_masked(tmp_path, receiver):
    hook = receiver([500, 500, 500])
    url = f"{hook.url}/services/T1/B1/very-secret-path"
    run_dir = _finished_run(tmp_path)
    (failure,) = post_run_webhooks([WebhookConfig(platform="slack", url=url, backoff_seconds=0)], run_dir, "listing")
    assert "HTTP 500" in failure and "after 3 attempt(s)" in failure
    assert "very-secret-path" not in failure


def test_only_the_summary_stage_posts(tmp_path, receiver):
    hook = receiver()
    store = WebhookStore({"type": "webhook", "platform": "generic", "url": f"{hook.url}/x"},
                         StoreContext(eval_dir=tmp_path))
    run_dir = _finished_run(tmp_path)
    for stage in ("cases", "traces", "results", "drift"):
        store.write_run(run_dir, stage)
    assert hook.posts == []
    store.write_run(run_dir, "summary")
    assert len(hook.posts) == 1 and store.label == "webhook:generic"


def test_a_4xx_is_not_retried(tmp_path, receiver):
    hook = receiver([404])
    (failure,) = post_run_webhooks([WebhookConfig(platform="generic", url=f"{hook.url}/x", backoff_seconds=0)],
                                   _finished_run(tmp_path), "listing")
    assert len(hook.posts) == 1 and "HTTP 404" in failure


@pytest.mark.parametrize(("entry", "message"), [
    ("{type: webhook, platform: teams, url: 'https://x.io'}", "unknown webhook platform 'teams'"),
    ("{type: webhook, platform: slack}", "platform slack needs url"),
    ("{type: webhook, platform: slack, url: 'http://hooks.example.com/x'}", "plain http is only allowed to loopback"),
    ("{type: webhook, platform: linear, api_key: k}", "platform linear needs issue_id"),
])
def test_bad_webhook_configs_are_load_errors_with_their_line(tmp_path, entry, message):
    path = write_eval(tmp_path / "toy", extra_yaml=f"  - {entry}\n")  # after the local_files output
    with pytest.raises(ConfigError) as info:
        load_eval(path)
    assert message in str(info.value) and "eval.yaml:" in str(info.value) and "output[1]" in str(info.value)


@pytest.mark.integration
def test_evalh_run_posts_the_run_and_keeps_the_webhook_url_out_of_the_run_directory(tmp_path, env, receiver):
    hook = receiver([502])
    path = write_eval(tmp_path / "toy", cases=3, extra_yaml=(
        "  - {type: webhook, platform: slack, url: '${SLACK_WEBHOOK_URL}', backoff_seconds: 0}\n"))
    secret_url = f"{hook.url}/services/T0/B0/xoxb-not-for-disk"
    proc = run_evalh(["run", str(path)], {**env, "SLACK_WEBHOOK_URL": secret_url}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(hook.posts) == 2 and hook.posts[-1]["path"] == "/services/T0/B0/xoxb-not-for-disk"
    assert "evalh toy" in hook.posts[-1]["body"]["blocks"][0]["text"]["text"]
    for file in (tmp_path / "toy" / "runs").rglob("*"):
        if file.is_file():
            assert b"xoxb-not-for-disk" not in file.read_bytes(), file
    assert "xoxb-not-for-disk" not in proc.stdout + proc.stderr


@pytest.mark.integration
def test_a_failing_webhook_never_fails_the_run_and_is_recorded_masked(tmp_path, env, receiver):
    hook = receiver([500] * 9)
    path = write_eval(tmp_path / "toy", cases=2, extra_yaml=(
        "  - {type: webhook, platform: discord, url: '${HOOK}', backoff_seconds: 0, max_attempts: 2}\n"))
    proc = run_evalh(["run", str(path)], {**env, "HOOK": f"{hook.url}/api/webhooks/1/tok-secret-9"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(hook.posts) == 2
    said = " ".join(proc.stderr.split())
    assert "warning: webhook not posted:" in said and "HTTP 500" in said and "tok-secret-9" not in said
    (run_dir,) = [p for p in (tmp_path / "toy" / "runs").iterdir() if p.name != "baselines"]
    (record,) = [json.loads(line) for line in (run_dir / "publish.jsonl").read_text().splitlines()]
    assert record["target"] == "webhook:discord" and "tok-secret-9" not in json.dumps(record)
