"""Five-field cron expressions: validated at load with a message per field, ticks from croniter.

The subset of cron that schedules use is checked here, so a bad expression is a load
error that says which field is wrong and what it allows: ``minute hour day-of-month
month day-of-week``, each field ``*``, ``N``, ``N-M``, a step (``*/S``, ``N-M/S``, ``N/S``)
or a comma list of those; month and weekday names (``jan``, ``mon``); weekday 7 is Sunday;
and the macros ``@hourly``, ``@daily``/``@midnight``, ``@weekly``, ``@monthly``,
``@yearly``/``@annually``. Ticks are croniter's (Vixie cron semantics: when both day fields
are restricted a day matches either of them), checked against Dagster's schedules in tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from evalh_pipeline.errors import UserError

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


class CronError(UserError, ValueError):
    """A cron expression that is not a valid five-field schedule."""


@dataclass(frozen=True)
class Cron:
    """A valid cron expression (``five_fields``: the same with its macro expanded)."""

    expression: str
    five_fields: str

    def latest_tick(self, now: datetime, timezone: str = "UTC") -> datetime:
        """The latest tick at or before ``now`` (aware), in ``timezone``."""
        # Imported here: croniter (with dateutil) costs ~0.1 s, and only the sensors need ticks,
        # not every `evalh` command that loads an eval.
        from croniter import croniter

        local = now.astimezone(ZoneInfo(timezone))
        tick: datetime = croniter(self.five_fields, local + timedelta(seconds=1)).get_prev(datetime)
        return tick


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
    if parts[2] != "*" and parts[4] == "*" and not any(
        day <= _MONTH_LENGTH[month] for month in values[3] for day in values[2]
    ):
        raise CronError(f"{expression!r} never fires: no such day in the month(s) it names")
    return Cron(expression=expression, five_fields=" ".join(parts))


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
