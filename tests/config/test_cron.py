"""Cron expressions of `schedule.drift_cron`: validated at load, ticks as Dagster's schedules compute them."""

from __future__ import annotations

import re

from datetime import datetime, timedelta, timezone

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.config.cron import CronError, parse_cron
from tests.support.evals import write_eval

EXPRESSIONS = ["0 6 * * *", "*/15 9-17 * * mon-fri", "30 8 1,15 * *", "0 0 29 2 *", "5 4 * jan-mar 0",
               "0 12 13 * fri", "@weekly", "@hourly", "0 0 * * 7", "10-50/20 */5 * * *"]


@pytest.mark.parametrize("expression", EXPRESSIONS)
@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/New_York"])
def test_latest_tick_agrees_with_dagsters_schedules(expression, zone):
    from dagster._utils.schedules import get_latest_completed_cron_tick

    cron = parse_cron(expression)
    start = datetime(2025, 3, 1, 0, 7, tzinfo=timezone.utc)
    for hours in range(0, 24 * 40, 37):  # across a month boundary and a DST change
        now = start + timedelta(hours=hours)
        expected = get_latest_completed_cron_tick(expression, now + timedelta(seconds=1), zone)
        assert cron.latest_tick(now, zone) == expected, (expression, zone, now)


@pytest.mark.parametrize(("expression", "message"), [
    ("0 6 * *", "has 4 field(s); a cron expression has five"),
    ("60 * * * *", "minute: '60' is not allowed (use 0-59"),
    ("* * * * someday", "day of week: 'someday' is not allowed (use 0-7 or sun..sat"),
    ("*/0 * * * *", "step '0' in '*/0' must be a positive whole number"),
    ("0 9-5 * * *", "hour: range '9-5' runs backwards"),
    ("0 0 30 2 *", "never fires"),
    ("@sometimes", "unknown macro '@sometimes'"),
])
def test_bad_expressions_say_what_is_wrong(expression, message):
    with pytest.raises(CronError, match=re.escape(message)):
        parse_cron(expression)


def test_a_bad_drift_cron_is_a_config_error_with_file_line_and_key(tmp_path):
    path = write_eval(tmp_path / "toy", extra_yaml='schedule:\n  timezone: UTC\n  drift_cron: "0 25 * * *"\n')
    with pytest.raises(ConfigError) as caught:
        load_eval(path)
    (issue,) = caught.value.issues
    line = path.read_text().splitlines().index('  drift_cron: "0 25 * * *"') + 1
    assert (issue.file, issue.line, issue.key) == ("eval.yaml", line, "schedule.drift_cron")
    assert "hour: '25' is not allowed (use 0-23" in issue.message


def test_an_unknown_timezone_or_key_is_refused(tmp_path):
    path = write_eval(tmp_path / "toy", extra_yaml="schedule: {timezone: Mars/Olympus, cron: x}\n")
    with pytest.raises(ConfigError) as caught:
        load_eval(path)
    messages = {issue.key: issue.message for issue in caught.value.issues}
    assert "unknown time zone 'Mars/Olympus'" in messages["schedule.timezone"]
    assert messages["schedule.cron"] == "unknown key (allowed: drift_cron, timezone)"


def test_the_default_schedule_is_midnight_utc(tmp_path):
    schedule = load_eval(write_eval(tmp_path / "toy")).config.schedule
    assert (schedule.drift_cron, schedule.timezone) == ("0 0 * * *", "UTC")
