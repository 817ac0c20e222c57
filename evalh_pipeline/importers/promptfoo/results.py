"""promptfoo's ``results.json`` (``promptfoo eval -o results.json``) as a replayable baseline.

Each result (a test × prompt × provider cell) becomes the trace promptfoo saw: its output,
latency, cost and token counts, under the case's ``embedded_traces[<variant>]``. The
baseline eval (``promptfoo-baseline.yaml``, beside ``eval.yaml``, same name, same cases and
evaluators) replays them with the ``replay`` system; its run, promoted, is what ``evalh
drift`` and ``evalh compare`` hold the next run of ``eval.yaml`` against.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalh_pipeline.importers.report import BadSource, ImportReport

BASELINE_EVAL = "promptfoo-baseline.yaml"
BASELINE_CASES = "promptfoo-baseline-cases.yaml"


def read_results(path: Path) -> tuple[str | None, list[dict[str, Any]]]:
    """(evalId, the result rows) of a promptfoo ``results.json``; anything else is bad input."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BadSource(path.name, None, "", f"cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BadSource(path.name, exc.lineno, "", f"invalid JSON: {exc.msg}") from None
    results = data.get("results") if isinstance(data, dict) else None
    rows = results.get("results") if isinstance(results, dict) else None
    if not isinstance(rows, list):
        raise BadSource(path.name, None, "", "not a promptfoo results file (no results.results list; "
                                   "write one with `promptfoo eval -o results.json`)")
    return data.get("evalId"), rows


def _trace(row: dict[str, Any], eval_id: str | None) -> dict[str, Any]:
    response = row.get("response") or {}
    output = response.get("output")
    usage = response.get("tokenUsage") or row.get("tokenUsage") or {}
    metrics: dict[str, Any] = {}
    if isinstance(row.get("cost"), (int, float)):
        metrics["cost_usd"] = row["cost"]
    if isinstance(usage.get("prompt"), int):
        metrics["token_input"] = usage["prompt"]
    if isinstance(usage.get("completion"), int):
        metrics["token_output"] = usage["completion"]
    return {
        "output": {"final_answer": output if isinstance(output, str) or output is None else json.dumps(output)},
        "latency_ms": int(row.get("latencyMs") or 0),
        "metrics": metrics,
        "extra": {"source_platform": "promptfoo", "trace_id": f"{eval_id}:{row.get('id') or ''}"},
    }


def attach_results(path: Path, cases: list[dict[str, Any]], variants: dict[tuple[int, str], str],
                   report: ImportReport) -> list[dict[str, Any]]:
    """The cases, each with ``embedded_traces`` from ``path``'s rows. ``variants`` maps
    (prompt index, provider id or label) to the variant's name; a row that matches no case
    or variant is reported."""
    eval_id, rows = read_results(path)
    by_id = {c["id"]: {**c, "embedded_traces": {}} for c in cases}
    for number, row in enumerate(rows):
        where = f"results.results[{number}]"
        provider = row.get("provider") or {}
        index = row.get("promptIdx")
        name = next((variants[(index, key)] for key in (provider.get("label"), provider.get("id"))
                     if isinstance(index, int) and isinstance(key, str) and (index, key) in variants), None)
        case = _case_of(row, cases)
        if name is None or case is None:
            what = "its prompt × provider is not an imported variant" if name is None else "its test is not an imported case"
            report.add(path.name, None, where, what, "left out of the baseline")
            continue
        if row.get("error") and not (row.get("response") or {}).get("output"):
            report.add(path.name, None, where, f"promptfoo's cell errored: {str(row['error'])[:120]}",
                       "replayed as an errored cell", "note")
            continue
        by_id[case["id"]]["embedded_traces"][name] = _trace(row, eval_id)
    return list(by_id.values())


def _case_of(row: dict[str, Any], cases: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The case of a result: the test at ``testIdx`` when its vars agree, else the one with those vars."""
    variables = row.get("vars") if isinstance(row.get("vars"), dict) else None
    index = row.get("testIdx")
    if isinstance(index, int) and 0 <= index < len(cases):
        if variables is None or cases[index]["input"]["vars"] == variables:
            return cases[index]
    matches = [c for c in cases if c["input"]["vars"] == variables]
    return matches[0] if len(matches) == 1 else None
