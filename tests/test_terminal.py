"""What evalh prints: escaping of untrusted text and tables that never cut a name."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from evalh_pipeline import terminal

HEADERS = ["variant", "cases", "passed", "errored", "pass rate", "avg latency ms", "avg cost $"]
ROWS = [["agent_main", "7", "7", "0", "100.0%", "12.0", "0.000400"],
        ["agent_experimental", "7", "4", "0", "57.1%", "12.4", "0.000400"]]


@pytest.mark.parametrize("raw, shown", [
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),          # OSC window title
    ("\x1b[2J\x1b[31m", "\\x1b[2J\\x1b[31m"),             # clear screen, colour
    ("\x9b31m", "\\x9b31m"),                              # one-byte CSI (C1)
    ("a\u202eb", "a\\u202eb"),                            # right-to-left override
    ("tab\tand\nnewline", "tab\tand\nnewline"),          # layout characters stay
    ("cases.jsonl:100: [red]x[/red]", "cases.jsonl:100: [red]x[/red]"),
])
def test_escape_control_shows_terminal_controls_as_escapes(raw, shown):
    assert terminal.escape_control(raw) == shown


@pytest.fixture
def screen(monkeypatch):
    """stdout as a terminal of a given width, captured."""
    def make(width: int) -> io.StringIO:
        buffer = io.StringIO()
        stream = terminal.Stream()
        stream._decided, stream._terminal = True, buffer
        stream._console = Console(file=buffer, width=width, force_terminal=True, color_system=None)
        monkeypatch.setattr(terminal, "out", stream)
        return buffer
    return make


def test_a_table_on_an_80_column_terminal_keeps_names_whole(screen):
    buffer = screen(80)
    terminal.table(HEADERS, ROWS, title="run x")
    text = buffer.getvalue()
    assert "┃ variant" in text and "│ agent_experimental │" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_table_too_wide_for_the_terminal_falls_back_to_the_plain_layout(screen):
    buffer = screen(50)
    terminal.table(HEADERS, ROWS)
    lines = buffer.getvalue().splitlines()
    assert lines[0].split() == ["variant", "cases", "passed", "errored", "pass", "rate", "avg", "latency", "ms",
                                "avg", "cost", "$"]
    assert any(line.startswith("agent_experimental ") for line in lines) and "…" not in buffer.getvalue()


def test_a_table_off_a_terminal_is_plain_and_escaped(monkeypatch, capsys):
    monkeypatch.setattr(terminal, "out", terminal.Stream())
    terminal.table(HEADERS, [["bad\x1b[2Jname", *ROWS[0][1:]]])
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "bad\\x1b[2Jname" in printed


def test_counts_and_deltas_read_as_words():
    assert terminal.plural(1, "sample") == "1 sample" and terminal.plural(2, "sample") == "2 samples"
    assert terminal.percentage_points(-0.0425) == "-4.2 pp"
    # Rounded as the reports and the metadata round (queries/report.py): no float noise, no "-0.0".
    assert terminal.percentage_points(-0.19999999999999996) == "-20.0 pp"
    assert terminal.percentage_points(-0.0001) == "+0.0 pp"
