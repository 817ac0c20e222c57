"""Five-field cron expressions: parsed and validated at load, and their ticks computed.

The engine does not import Dagster, and croniter is not a dependency, so the subset of
cron that schedules use is parsed here: ``minute hour day-of-month month day-of-week``,
each field ``*``, ``N``, ``N-M``, a step (``*/S``, ``N-M/S``, ``N/S``) or a comma list of
those; month and weekday names (``jan``, ``mon``); weekday 7 is Sunday; and the macros
``@hourly``, ``@daily``/``@midnight``, ``@weekly``, ``@monthly``, ``@yearly``/``@annually``.
As in Vixie cron, when both day fields are restricted a day matches either of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
# (name, lowest, highest, names indexed from lowest)
_FIELDS = [
    ("minute", 0, 59, []),
    ("hour", 0, 23, []),
    ("day of month", 1, 31, []),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
]
_MONTH_LENGTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}
# Far enough back to find the latest tick of any valid expression (Feb 29 on a weekday).
_LOOKBACK_DAYS = 366 * 8


class CronError(ValueError):
    """A cron expression that is not a valid five-field schedule."""


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression: the allowed values of each field."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool

    def matches_day(self, day: datetime) -> bool:
        if day.month not in self.months:
            return False
        in_days = day.day in self.days
        in_weekdays = (day.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return in_days or in_weekdays
        return in_days and in_weekdays

    def latest_tick(self, now: datetime, timezone: str = "UTC") -> datetime:
        """The latest tick at or before ``now`` (aware), in ``timezone``."""
        zone = ZoneInfo(timezone)
        local = now.astimezone(zone).replace(second=0, microsecond=0)
        times = sorted(((h, m) for h in self.hours for m in self.minutes), reverse=True)
        day = local.replace(hour=0, minute=0, tzinfo=None)
        for back in range(_LOOKBACK_DAYS):
            candidate_day = day - timedelta(days=back)
            if not self.matches_day(candidate_day):
                continue
            for hour, minute in times:
                tick = candidate_day.replace(hour=hour, minute=minute, tzinfo=zone)
                if tick <= local:
                    return tick
        raise CronError(f"{self.expression!r} has no tick in the last {_LOOKBACK_DAYS} days")


def parse_cron(expression: str) -> Cron:
    """Parse ``expression``; :class:`CronError` says which field is wrong and what is allowed."""
    if not isinstance(expression, str) or not expression.strip():
        raise CronError("a cron expression is five fields: minute hour day-of-month month day-of-week")
    text = expression.strip().lower()
    if text.startswith("@"):
        if text not in MACROS:
            raise CronError(f"unknown macro {expression!r} (known: {', '.join(MACROS)})")
        text = MACROS[text]
    parts = text.split()
    if len(parts) != 5:
        raise CronError(f"{expression!r} has {len(parts)} field(s); a cron expression has five: "
                        "minute hour day-of-month month day-of-week (e.g. '0 6 * * *')")
    values = [_parse_field(part, *spec) for part, spec in zip(parts, _FIELDS)]
    weekdays = frozenset(d % 7 for d in values[4])
    if parts[2] != "*" and parts[4] == "*" and not any(
        day <= _MONTH_LENGTH[month] for month in values[3] for day in values[2]
    ):
        raise CronError(f"{expression!r} never fires: no such day in the month(s) it names")
    return Cron(
        expression=expression, minutes=values[0], hours=values[1], days=values[2], months=values[3],
        weekdays=weekdays, days_restricted=parts[2] != "*", weekdays_restricted=parts[4] != "*",
    )


def _parse_field(text: str, name: str, low: int, high: int, names: list[str]) -> frozenset[int]:
    allowed = set()
    for item in text.split(","):
        allowed |= _parse_item(item, name, low, high, names)
    return frozenset(allowed)


def _parse_item(item: str, name: str, low: int, high: int, names: list[str]) -> set[int]:
    base, _, step_text = item.partition("/")
    step = 1
    if step_text:
        if not step_text.isdigit() or int(step_text) == 0:
            raise CronError(f"{name}: step {step_text!r} in {item!r} must be a positive whole number")
        step = int(step_text)
    if base == "*":
        start, end = low, high
    elif "-" in base:
        first, _, last = base.partition("-")
        start, end = _value(first, name, low, high, names), _value(last, name, low, high, names)
        if start > end:
            raise CronError(f"{name}: range {base!r} runs backwards")
    else:
        start = _value(base, name, low, high, names)
        end = high if step_text else start
    return set(range(start, end + 1, step))


def _value(text: str, name: str, low: int, high: int, names: list[str]) -> int:
    if text in names:
        return names.index(text) + low
    if not text.isdigit() or not low <= int(text) <= high:
        hint = f" or {names[0]}..{names[-1]}" if names else ""
        raise CronError(f"{name}: {text!r} is not allowed (use {low}-{high}{hint}, '*', ranges, steps, lists)")
    return int(text)
