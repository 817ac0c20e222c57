"""Small charts drawn on the server as SVG (no script): a rate limit's concurrency over time, pass rates over runs."""

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


# Line colours of the variants, in turn (a variant past the last reuses the first).
RATE_COLOURS = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#9a6700", "#57606a")
RATE_WIDTH, RATE_HEIGHT, RATE_LEFT, RATE_BOTTOM = 640, 180, 36, 16


@dataclass(frozen=True)
class RatePoint:
    """One run's pass rate of one variant, at (x, y) in the chart."""

    x: float
    y: float
    run_id: str
    rate: float
    passed: int
    cases: int


@dataclass(frozen=True)
class RateLine:
    """One variant's pass rate over the runs: SVG ``points`` and each run's point."""

    variant: str
    colour: str
    points: str
    marks: list[RatePoint]


@dataclass(frozen=True)
class RateChart:
    """Pass rate per variant over runs (oldest left), in a RATE_WIDTH x RATE_HEIGHT box."""

    lines: list[RateLine]
    runs: list[str]
    grid: list[tuple[float, str]]  # (y, label) of the 0%, 50% and 100% lines
    left: int = RATE_LEFT
    width: int = RATE_WIDTH
    height: int = RATE_HEIGHT


def rate_chart(runs: list[str], counts: dict[tuple[int, str], tuple[int, int]], variants: list[str]) -> RateChart | None:
    """The chart of ``counts`` ((run index, variant) -> (cases, passed)) over ``runs`` (oldest first).

    None when no variant has a rate in any run. A run a variant has no cases in breaks nothing:
    its line joins the runs it has.
    """
    span = max(len(runs) - 1, 1)

    def x(index: int) -> float:
        return RATE_LEFT + PAD + (RATE_WIDTH - RATE_LEFT - 2 * PAD) * (index / span if len(runs) > 1 else 0.5)

    def y(rate: float) -> float:
        return PAD + (RATE_HEIGHT - RATE_BOTTOM - 2 * PAD) * (1 - rate)

    lines = []
    for number, variant in enumerate(variants):
        marks = [RatePoint(x(i), y(passed / cases), run_id, passed / cases, passed, cases)
                 for i, run_id in enumerate(runs)
                 for cases, passed in [counts.get((i, variant), (0, 0))] if cases]
        if marks:
            lines.append(RateLine(variant, RATE_COLOURS[number % len(RATE_COLOURS)],
                                  " ".join(f"{m.x:.1f},{m.y:.1f}" for m in marks), marks))
    grid = [(y(level), f"{level:.0%}") for level in (1.0, 0.5, 0.0)]
    return RateChart(lines, runs, grid) if lines else None
