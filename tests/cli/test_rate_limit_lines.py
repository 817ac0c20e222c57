"""`evalh run`'s lines about the rate limits a run met (read from its rate_limits.jsonl)."""

from __future__ import annotations

import json

from evalh_pipeline.cli.running import _print_rate_limits
from evalh_pipeline.store.run_dir import RunDirectory


def test_a_line_per_limit_that_answered_rate_limits_and_a_warning_when_one_was_given_up(tmp_path, capsys):
    run_dir = RunDirectory(tmp_path / "run")
    run_dir.path.mkdir()
    lines = [{"stage": "traces", "limit": "api.example.com (credential 1)", "requests": 200, "rate_limited": 10,
              "levels": [[0, 64], [1.5, 32], [9.0, 40]], "gave_up": None},
             {"stage": "traces", "limit": "quiet.example.com", "requests": 50, "rate_limited": 0, "levels": [[0, 64]]},
             {"stage": "results", "limit": "pool judges", "requests": 3, "rate_limited": 3, "levels": [[0, 2], [0.1, 1]],
              "gave_up": "pool judges answered only rate limits for 300 s (run.rate_limits.budget_seconds: 300)"}]
    run_dir.rate_limits.write_text("".join(json.dumps(line) + "\n" for line in lines))
    _print_rate_limits(run_dir)
    captured = capsys.readouterr()
    assert ("rate limit api.example.com (credential 1) (traces): 10 of 200 request(s) answered with a rate limit "
            "(5.0%); concurrency at the end 40") in captured.out
    assert "quiet.example.com" not in captured.out
    assert "warning: gave up on a rate limit: pool judges answered only rate limits for 300 s" in captured.err


def test_a_run_without_rate_limits_prints_nothing(tmp_path, capsys):
    run_dir = RunDirectory(tmp_path)
    _print_rate_limits(run_dir)
    assert capsys.readouterr().out == ""
