"""Small charts drawn on the server as SVG (no script): a rate limit's concurrency over time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WIDTH, HEIGHT, PAD = 480, 120, 4


@dataclass(frozen=True)
class LevelChart:
    """One limit's concurrency level as a step line: SVG ``points`` in a WIDTH x HEIGHT box."""

    limit: str
    stage: str
    points: str
    max_level: int
    seconds: float
    requests: int
    rate_limited: int
    gave_up: str | None


def level_chart(record: dict[str, Any]) -> LevelChart | None:
    """The chart of one ``rate_limits.jsonl`` record (None: no level to draw)."""
    levels = [(float(t), int(level)) for t, level in record.get("levels") or []
              if isinstance(t, (int, float)) and isinstance(level, (int, float))]
    if not levels:
        return None
    top = max(max(level for _, level in levels), int(record.get("ceiling") or 1), 1)
    end = max(levels[-1][0], 1e-3)

    def x(t: float) -> float:
        return PAD + (WIDTH - 2 * PAD) * t / end

    def y(level: int) -> float:
        return HEIGHT - PAD - (HEIGHT - 2 * PAD) * level / top

    steps = [(x(levels[0][0]), y(levels[0][1]))]
    for (_, before), (t, level) in zip(levels, levels[1:]):
        steps += [(x(t), y(before)), (x(t), y(level))]
    steps.append((x(end), y(levels[-1][1])))
    return LevelChart(limit=str(record.get("limit", "")), stage=str(record.get("stage", "")),
                      points=" ".join(f"{px:.1f},{py:.1f}" for px, py in steps), max_level=top, seconds=end,
                      requests=int(record.get("requests") or 0), rate_limited=int(record.get("rate_limited") or 0),
                      gave_up=record.get("gave_up") if isinstance(record.get("gave_up"), str) else None)
